-- The per-column projections csvformat.projection() writes, one column a line, in the order
-- of COLUMNS in test_csvformat.py. Their bytes are proven against DuckDB and PostgreSQL in
-- test_csv_dialect.py; a change here changes what exports write (a new dialect version?).

-- duckdb: default
"i" AS "i"
"d" AS "d"
"day" AS "day"
"b" AS "b"
CASE WHEN isnan("f") THEN 'NaN' ELSE CAST("f" AS VARCHAR) END AS "f"
CASE WHEN isnan("r") THEN 'NaN' ELSE CAST("r" AS VARCHAR) END AS "r"
strftime("t", '%Y-%m-%dT%H:%M:%S.%g') AS "t"
strftime("t0", '%Y-%m-%dT%H:%M:%S') AS "t0"
"tz" AS "tz"
CASE WHEN ascii("s") IN (61, 43, 45, 64, 9, 13, 10, 32) AND ascii(ltrim("s")) IN (61, 43, 45, 64, 9, 13, 10) THEN '''' || "s" ELSE "s" END AS "s"
CASE WHEN ascii(CAST("u" AS VARCHAR)) IN (61, 43, 45, 64, 9, 13, 10, 32) AND ascii(ltrim(CAST("u" AS VARCHAR))) IN (61, 43, 45, 64, 9, 13, 10) THEN '''' || CAST("u" AS VARCHAR) ELSE CAST("u" AS VARCHAR) END AS "u"
CASE WHEN ascii("say ""hi""") IN (61, 43, 45, 64, 9, 13, 10, 32) AND ascii(ltrim("say ""hi""")) IN (61, 43, 45, 64, 9, 13, 10) THEN '''' || "say ""hi""" ELSE "say ""hi""" END AS "say ""hi"""

-- duckdb: unsafe, precision 0
"i" AS "i"
"d" AS "d"
"day" AS "day"
"b" AS "b"
CASE WHEN isnan("f") THEN 'NaN' ELSE CAST("f" AS VARCHAR) END AS "f"
CASE WHEN isnan("r") THEN 'NaN' ELSE CAST("r" AS VARCHAR) END AS "r"
strftime("t", '%Y-%m-%dT%H:%M:%S') AS "t"
strftime("t0", '%Y-%m-%dT%H:%M:%S') AS "t0"
"tz" AS "tz"
"s" AS "s"
CAST("u" AS VARCHAR) AS "u"
"say ""hi""" AS "say ""hi"""

-- postgres: default
"i" AS "i"
"d" AS "d"
"day" AS "day"
CASE WHEN "b" THEN 'true' WHEN NOT "b" THEN 'false' END AS "b"
CASE WHEN abs("f") < 1e15 THEN CASE WHEN "f" = trunc("f") THEN CAST("f" AS text) || '.0' ELSE CAST("f" AS text) END WHEN abs("f") < 1e16 THEN CASE WHEN "f" < 0 THEN '-' ELSE '' END || rpad(left(replace(ltrim(split_part(CAST("f" AS text), 'e', 1), '-'), '.', ''), CAST(split_part(CAST("f" AS text), 'e', 2) AS integer) + 1), CAST(split_part(CAST("f" AS text), 'e', 2) AS integer) + 1, '0') || '.' || coalesce(nullif(substr(replace(ltrim(split_part(CAST("f" AS text), 'e', 1), '-'), '.', ''), CAST(split_part(CAST("f" AS text), 'e', 2) AS integer) + 2), ''), '0') WHEN "f" = 'Infinity' THEN 'inf' WHEN "f" = '-Infinity' THEN '-inf' ELSE CAST("f" AS text) END AS "f"
CASE WHEN abs("r") < 1e6 THEN CASE WHEN "r" = trunc("r") THEN CAST("r" AS text) || '.0' ELSE CAST("r" AS text) END WHEN abs("r") < 1e16 THEN CASE WHEN "r" < 0 THEN '-' ELSE '' END || rpad(left(replace(ltrim(split_part(CAST("r" AS text), 'e', 1), '-'), '.', ''), CAST(split_part(CAST("r" AS text), 'e', 2) AS integer) + 1), CAST(split_part(CAST("r" AS text), 'e', 2) AS integer) + 1, '0') || '.' || coalesce(nullif(substr(replace(ltrim(split_part(CAST("r" AS text), 'e', 1), '-'), '.', ''), CAST(split_part(CAST("r" AS text), 'e', 2) AS integer) + 2), ''), '0') WHEN "r" = 'Infinity' THEN 'inf' WHEN "r" = '-Infinity' THEN '-inf' ELSE CAST("r" AS text) END AS "r"
coalesce(to_char("t", 'YYYY-MM-DD"T"HH24:MI:SS.FF3'), replace(CAST("t" AS text), ' ', 'T')) AS "t"
coalesce(to_char("t0", 'YYYY-MM-DD"T"HH24:MI:SS'), replace(CAST("t0" AS text), ' ', 'T')) AS "t0"
coalesce(CASE WHEN "tz" >= '1973-01-01' THEN to_char("tz", 'YYYY-MM-DD"T"HH24:MI:SS.FF6OF') ELSE to_char("tz", 'YYYY-MM-DD"T"HH24:MI:SS.FF6OF') || CASE WHEN CAST(extract(timezone FROM "tz") AS integer) % 60 <> 0 THEN ':' || lpad(CAST(abs(CAST(extract(timezone FROM "tz") AS integer) % 60) AS text), 2, '0') ELSE '' END END, replace(CAST("tz" AS text), ' ', 'T')) AS "tz"
CASE WHEN ascii("s") IN (61, 43, 45, 64, 9, 13, 10, 32) AND ascii(ltrim("s")) IN (61, 43, 45, 64, 9, 13, 10) THEN '''' || "s" ELSE "s" END AS "s"
CASE WHEN ascii(CAST("u" AS text)) IN (61, 43, 45, 64, 9, 13, 10, 32) AND ascii(ltrim(CAST("u" AS text))) IN (61, 43, 45, 64, 9, 13, 10) THEN '''' || CAST("u" AS text) ELSE CAST("u" AS text) END AS "u"
CASE WHEN ascii("say ""hi""") IN (61, 43, 45, 64, 9, 13, 10, 32) AND ascii(ltrim("say ""hi""")) IN (61, 43, 45, 64, 9, 13, 10) THEN '''' || "say ""hi""" ELSE "say ""hi""" END AS "say ""hi"""

-- postgres: unsafe, precision 0
"i" AS "i"
"d" AS "d"
"day" AS "day"
CASE WHEN "b" THEN 'true' WHEN NOT "b" THEN 'false' END AS "b"
CASE WHEN abs("f") < 1e15 THEN CASE WHEN "f" = trunc("f") THEN CAST("f" AS text) || '.0' ELSE CAST("f" AS text) END WHEN abs("f") < 1e16 THEN CASE WHEN "f" < 0 THEN '-' ELSE '' END || rpad(left(replace(ltrim(split_part(CAST("f" AS text), 'e', 1), '-'), '.', ''), CAST(split_part(CAST("f" AS text), 'e', 2) AS integer) + 1), CAST(split_part(CAST("f" AS text), 'e', 2) AS integer) + 1, '0') || '.' || coalesce(nullif(substr(replace(ltrim(split_part(CAST("f" AS text), 'e', 1), '-'), '.', ''), CAST(split_part(CAST("f" AS text), 'e', 2) AS integer) + 2), ''), '0') WHEN "f" = 'Infinity' THEN 'inf' WHEN "f" = '-Infinity' THEN '-inf' ELSE CAST("f" AS text) END AS "f"
CASE WHEN abs("r") < 1e6 THEN CASE WHEN "r" = trunc("r") THEN CAST("r" AS text) || '.0' ELSE CAST("r" AS text) END WHEN abs("r") < 1e16 THEN CASE WHEN "r" < 0 THEN '-' ELSE '' END || rpad(left(replace(ltrim(split_part(CAST("r" AS text), 'e', 1), '-'), '.', ''), CAST(split_part(CAST("r" AS text), 'e', 2) AS integer) + 1), CAST(split_part(CAST("r" AS text), 'e', 2) AS integer) + 1, '0') || '.' || coalesce(nullif(substr(replace(ltrim(split_part(CAST("r" AS text), 'e', 1), '-'), '.', ''), CAST(split_part(CAST("r" AS text), 'e', 2) AS integer) + 2), ''), '0') WHEN "r" = 'Infinity' THEN 'inf' WHEN "r" = '-Infinity' THEN '-inf' ELSE CAST("r" AS text) END AS "r"
coalesce(to_char("t", 'YYYY-MM-DD"T"HH24:MI:SS'), replace(CAST("t" AS text), ' ', 'T')) AS "t"
coalesce(to_char("t0", 'YYYY-MM-DD"T"HH24:MI:SS'), replace(CAST("t0" AS text), ' ', 'T')) AS "t0"
coalesce(CASE WHEN "tz" >= '1973-01-01' THEN to_char("tz", 'YYYY-MM-DD"T"HH24:MI:SSOF') ELSE to_char("tz", 'YYYY-MM-DD"T"HH24:MI:SSOF') || CASE WHEN CAST(extract(timezone FROM "tz") AS integer) % 60 <> 0 THEN ':' || lpad(CAST(abs(CAST(extract(timezone FROM "tz") AS integer) % 60) AS text), 2, '0') ELSE '' END END, replace(CAST("tz" AS text), ' ', 'T')) AS "tz"
"s" AS "s"
CAST("u" AS text) AS "u"
"say ""hi""" AS "say ""hi"""

"""The demo data set and its catalog, generated with plain DuckDB SQL (no extensions).

Text holds commas, quotes, newlines, unicode, NULLs, empty strings and formula-looking values,
so an export shows the CSV dialect and spreadsheet safety at work.
"""

from __future__ import annotations

import os
import tempfile
from datetime import date
from pathlib import Path

DEFAULT_ROWS = 2_000_000
FIRST_DAY = date(2024, 1, 1)

TEXTS = [
    "Widget",
    "Gadget, large",
    'Gizmo "Pro"',
    "Café crème",
    '=HYPERLINK("http://example.invalid","click")',
    "Multi\nline",
    "+1 add-on",
    "-minus sign",
    "@mention",
    "Ölfilter ✓ 日本",
    "  =SUM(A1:A9)",
    "\ttabbed",
]

NOTES = ["", "leave at the door", "gift, wrapped", 'say "hi"', "call first\r\nthen ring", "=1+1"]


def _sql_list(values: list[str]) -> str:
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def demo_days(today: date | None = None) -> int:
    """How many days the demo orders span: from 2024-01-01 through today (at least two years),
    so that "yesterday" has orders whenever the demo was built."""
    return max(731, ((today or date.today()) - FIRST_DAY).days + 1)


def build_demo_database(path: Path, rows: int = DEFAULT_ROWS) -> None:
    """Write the demo DuckDB file atomically (a temp file renamed into place)."""
    import duckdb

    days = demo_days()

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=path.parent, suffix=".duckdb.tmp")
    os.close(fd)
    os.unlink(temp_name)  # DuckDB creates the file itself
    con = duckdb.connect(temp_name)
    try:
        texts, notes = _sql_list(TEXTS), _sql_list(NOTES)
        con.execute(f"""
            CREATE TABLE products AS
            SELECT i AS product_id,
                   {texts}[1 + (i % {len(TEXTS)})] || ' #' || i AS name,
                   ['tools', 'garden', 'kitchen', 'toys', 'books'][1 + (i % 5)] AS category,
                   CAST(1 + (hash(i) % 100000) / 100.0 AS DECIMAL(10, 2)) AS price
              FROM range(1, 1001) AS t(i)
        """)
        con.execute("""
            CREATE TABLE customers AS
            SELECT i AS customer_id,
                   ['Ana', 'Bjørn', 'Chloé', 'Dmitri', 'Eve', 'Fatima', 'Gó', 'Hiro'][1 + (i % 8)]
                   || ' ' || ['Smith', 'O''Brien', 'Müller', 'Nguyen', 'García, Jr.'][1 + (i % 5)]
                   AS name,
                   CASE WHEN i % 10 = 0 THEN NULL ELSE 'customer' || i || '@example.com' END
                   AS email,
                   ['DE', 'FR', 'US', 'JP', 'BR', 'IN'][1 + (i % 6)] AS country,
                   TIMESTAMP '2020-01-01' + to_seconds(CAST(hash(i) % 126230400 AS BIGINT))
                   AS signed_up_at
              FROM range(1, 50001) AS t(i)
        """)
        con.execute(f"""
            CREATE TABLE orders AS
            SELECT i AS order_id,
                   1 + CAST(hash(i) % 50000 AS BIGINT) AS customer_id,
                   1 + CAST(hash(i * 7) % 1000 AS BIGINT) AS product_id,
                   DATE '2024-01-01' + CAST(i % {days} AS INTEGER) AS order_date,
                   TIMESTAMPTZ '2024-01-01 00:00:00+00'
                     + to_seconds(CAST(hash(i * 13) % {days * 86400} AS BIGINT))
                     + to_microseconds(CAST(CASE WHEN i % 3 = 0 THEN hash(i) % 1000000 ELSE 0 END
                                            AS BIGINT)) AS ordered_at,
                   1 + CAST(hash(i * 3) % 9 AS INTEGER) AS quantity,
                   CAST((hash(i * 5) % 10000000) / 100.0 AS DECIMAL(12, 2)) AS amount,
                   (hash(i * 11) % 4) <> 0 AS paid,
                   CAST((hash(i * 17) % 1000) / 997.0 AS DOUBLE) AS score,
                   CASE WHEN i % 10 = 0 THEN NULL
                        ELSE {notes}[1 + CAST(hash(i * 19) % {len(NOTES)} AS INTEGER)] END AS note
              FROM range(1, {int(rows) + 1}) AS t(i)
        """)
    finally:
        con.close()
    os.replace(temp_name, path)


DEMO_CATALOG = """\
# The demo catalog: saved queries over the demo DuckDB file beside it.
# Edit freely; `reportexport queries check` validates it.
version = 1

[sources.demo]
url = "duckdb:///demo.duckdb"
max_concurrent = 2
statement_timeout_seconds = 600
memory_limit = "256MB"

[queries.orders_by_day]
title = "Orders of one day"
description = "Every order placed on one day, with its customer and product."
source = "demo"
sql = \"\"\"
SELECT o.order_id, o.ordered_at, c.name AS customer, c.email, p.name AS product,
       o.quantity, o.amount, o.paid, o.note
  FROM orders o
  JOIN customers c USING (customer_id)
  JOIN products p USING (product_id)
 WHERE o.order_date = :day
 ORDER BY o.order_id
\"\"\"
parameters.day = { type = "date", min = "2024-01-01", description = "The day (from 2024 on)" }

[queries.customer_orders]
title = "Orders of one customer"
source = "demo"
sql = "SELECT * FROM orders WHERE customer_id = :customer_id ORDER BY order_id"
parameters.customer_id = { type = "integer", min = 1, max = 50000 }

[queries.products_by_category]
title = "Products of a category"
source = "demo"
sql = "SELECT * FROM products WHERE category = :category ORDER BY product_id"
parameters.category = { type = "enum", choices = ["tools", "garden", "kitchen", "toys", "books"] }

[queries.orders_since]
title = "Orders since a moment"
description = "Orders placed at or after a timestamp, above an amount, optionally paid only."
source = "demo"
sql = \"\"\"
SELECT * FROM orders
 WHERE ordered_at >= :since AND amount >= :min_amount AND (paid OR NOT :paid_only)
 ORDER BY order_id
\"\"\"
parameters.since = { type = "timestamp", min = "2024-01-01T00:00:00+00:00" }
parameters.min_amount = { type = "number", default = 0, min = 0 }
parameters.paid_only = { type = "boolean", default = false }
limits = { max_rows = 5_000_000 }

[queries.customers_by_country]
title = "Customers of a country (Excel)"
source = "demo"
sql = "SELECT * FROM customers WHERE country = :country ORDER BY customer_id"
parameters.country = { type = "string", min_length = 2, max_length = 2, pattern = "[A-Z]{2}" }
csv = { delimiter = ";", bom = true, line_ending = "crlf", time_zone = "Europe/Paris" }

[queries.revenue_by_month]
title = "Revenue by month (finance)"
description = "Paid orders' amounts per month: for the finance group only."
source = "demo"
sql = \"\"\"
SELECT date_trunc('month', order_date) AS month, count(*) AS orders, sum(amount) AS revenue
  FROM orders
 WHERE paid
 GROUP BY 1
 ORDER BY 1
\"\"\"
access = ["finance"]

[queries.my_country_customers]
title = "Customers of my country"
description = "The customers of your country: the value comes from your record (`country`)."
source = "demo"
sql = "SELECT * FROM customers WHERE country = :country ORDER BY customer_id"
parameters.country = { type = "string", bind = "country", description = "your country" }

[queries.all_orders]
title = "All orders"
description = "The whole orders table: the large export."
source = "demo"
sql = "SELECT * FROM orders ORDER BY order_id"

[queries.all_orders_gzip]
title = "All orders, gzipped"
source = "demo"
sql = "SELECT * FROM orders ORDER BY order_id"
csv = { gzip = true }
"""


def write_demo_catalog(path: Path, database: Path | None = None) -> None:
    """The demo catalog at `path`, its source the DuckDB file `database` (default: beside it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    text = DEMO_CATALOG
    if database is not None and database.resolve().parent != path.resolve().parent:
        text = text.replace("duckdb:///demo.duckdb", f"duckdb:///{database.resolve()}")
    path.write_text(text, encoding="utf-8")

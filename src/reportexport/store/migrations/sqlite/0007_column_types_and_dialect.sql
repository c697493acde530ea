-- What a succeeded job's CSV holds besides its column names: each column's type as written
-- ('integer', 'decimal(10,2)', 'timestamp(6)', ...; a JSON list beside `columns`) and the
-- version of the CSV dialect that wrote the bytes. Jobs that finished before this migration
-- were written by dialect 1.

ALTER TABLE jobs ADD COLUMN column_types TEXT;
ALTER TABLE jobs ADD COLUMN dialect_version INTEGER;
UPDATE jobs SET dialect_version = 1 WHERE object_key IS NOT NULL;

"""The analytics table on one machine: rows in local files, DuckDB answering the questions.

`files.LocalFileSink` writes the same rows the Firehose sink sends (newline-delimited JSON,
partitioned by date like the S3 objects), `duckdb_engine.DuckDBEngine` reads them through the
same outcomes view and runs the same question files, and `report` renders a question's answer
as one self-contained HTML file.
"""

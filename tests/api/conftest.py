"""Fixtures the API tests share with the export tests."""

from tests.exports.conftest import jobs_db as jobs_db
from tests.exports.conftest import local_objects as local_objects
from tests.exports.conftest import sources_dir as sources_dir

__all__ = ["jobs_db", "local_objects", "sources_dir"]

"""Moving data in and out: mongodump's directory format, written by
:func:`~foliodb.tools.dump.dump` and read by :func:`~foliodb.tools.restore.restore`."""

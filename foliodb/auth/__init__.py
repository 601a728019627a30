"""Authentication and authorization for ``foliodb serve --auth``: SCRAM in
:mod:`~foliodb.auth.scram`, built-in roles in :mod:`~foliodb.auth.roles`.
Users are managed by the commands in :mod:`foliodb.commands.users`."""

"""Authentication and authorization for ``foliodb serve --auth``, as pure
functions over documents: SCRAM in :mod:`~foliodb.auth.scram`; privileges,
resource patterns and the built-in roles in :mod:`~foliodb.auth.privileges`;
user-defined roles and inheritance in :mod:`~foliodb.auth.roles`; what each
command needs in :mod:`~foliodb.auth.command_table` (pipelines in
:mod:`~foliodb.auth.pipelines`); secrets kept out of messages and logs in
:mod:`~foliodb.auth.redaction`. Users and roles are stored and managed by
:mod:`foliodb.commands.users` and :mod:`foliodb.commands.roles`."""

"""Server-side JavaScript: ``$where``, ``$function``, ``$accumulator`` and ``mapReduce``.

:mod:`~foliodb.javascript.runtime` runs code in a sandboxed, bounded,
interruptible QuickJS context; :mod:`~foliodb.javascript.shell` is the
JavaScript every context starts with (the shell's types, ``emit``,
``tojson``); :mod:`~foliodb.javascript.values` converts BSON values.
Like :mod:`foliodb.interrupt`, this package sits below ``query/``, which
uses it, and knows nothing of commands or storage.
"""

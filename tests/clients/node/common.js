'use strict';
// Shared by the driver scenarios: connect to the URI given as argv[2] with
// command monitoring on, and print one canonical-EJSON line for Python to parse.
const { MongoClient, BSON } = require('mongodb');

function parseArgs() {
  const [uri, dbName] = process.argv.slice(2);
  if (!uri || !dbName) {
    console.error(`usage: node ${process.argv[1]} URI DBNAME`);
    process.exit(2);
  }
  return { uri, dbName };
}

// A client that records each command it sends (hello and monitoring aside): its
// name, outcome, the cursor id of a cursor-returning reply, and for killCursors
// the ids asked for and the ids the server says it killed.
function monitoredClient(uri) {
  const client = new MongoClient(uri, { monitorCommands: true, serverSelectionTimeoutMS: 5000 });
  const commands = [];
  const started = new Map();
  client.on('commandStarted', (ev) => started.set(ev.requestId, ev.command));
  client.on('commandSucceeded', (ev) => {
    const command = started.get(ev.requestId) || {};
    started.delete(ev.requestId);
    const entry = { name: ev.commandName, ok: true };
    if (ev.reply && ev.reply.cursor) entry.cursorId = ev.reply.cursor.id;
    if (ev.commandName === 'getMore') entry.getMoreOf = command.getMore;
    if (ev.commandName === 'killCursors') {
      entry.requested = command.cursors;
      entry.cursorsKilled = ev.reply.cursorsKilled;
      entry.cursorsNotFound = ev.reply.cursorsNotFound;
    }
    commands.push(entry);
  });
  client.on('commandFailed', (ev) => {
    started.delete(ev.requestId);
    commands.push({ name: ev.commandName, ok: false, error: String(ev.failure), code: ev.failure && ev.failure.code });
  });
  return { client, commands };
}

// Resolves once the line is written, so process.exit() cannot cut it short.
function emit(value) {
  const line = BSON.EJSON.stringify(value, { relaxed: false }) + '\n';
  return new Promise((resolve) => process.stdout.write(line, resolve));
}

// Run main(); print {error} and exit 1 on anything unexpected, so Python sees why.
function run(main) {
  main().then(
    () => process.exit(0),
    async (err) => {
      console.error(err);
      await emit({ unexpectedError: { name: err && err.name, message: String(err && err.message), code: err && err.code } });
      process.exit(1);
    },
  );
}

module.exports = { parseArgs, monitoredClient, emit, run };

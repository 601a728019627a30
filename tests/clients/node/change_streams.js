'use strict';
// collection.watch() with fullDocument 'updateLookup': one stream read through the event
// emitter (on('change')), one by tryNext() and async iteration, then a stream resumed with
// resumeAfter from a saved token. Prints the events for test_node_driver.py to check.
const { parseArgs, monitoredClient, emit, run } = require('./common');

const TIMEOUT_MS = 10000;

// Resolves when check() holds, polling; rejects after TIMEOUT_MS with what was awaited.
function until(check, what) {
  const deadline = Date.now() + TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const poll = () => {
      if (check()) resolve();
      else if (Date.now() > deadline) reject(new Error(`timed out waiting for ${what}`));
      else setTimeout(poll, 10);
    };
    poll();
  });
}

async function tryNextN(stream, n) {
  const got = [];
  const deadline = Date.now() + TIMEOUT_MS;
  while (got.length < n && Date.now() < deadline) {
    const event = await stream.tryNext();
    if (event !== null) got.push(event);
  }
  return got;
}

run(async () => {
  const { uri, dbName } = parseArgs();
  const { client, commands } = monitoredClient(uri);
  await client.connect();
  try {
    const coll = client.db(dbName).collection('orders');
    const options = { fullDocument: 'updateLookup', maxAwaitTimeMS: 200 };
    const out = {};

    // The emitter starts its cursor on its own: wait for the aggregate's reply before writing.
    const emitted = [];
    const emitterErrors = [];
    const emitter = coll.watch([], options);
    emitter.on('change', (event) => emitted.push(event));
    emitter.on('error', (err) => emitterErrors.push(String(err)));
    await until(() => commands.some((c) => c.name === 'aggregate' && c.ok), "the emitter's aggregate");

    // tryNext() opens the cursor (nothing yet: null); async iteration reads it afterwards.
    const iterated = coll.watch([], options);
    out.firstTryNext = await iterated.tryNext();

    await coll.insertOne({ _id: 1, item: 'pen', qty: 2 });
    await coll.updateOne({ _id: 1 }, { $set: { qty: 5 }, $inc: { sold: 1 } });
    await coll.insertOne({ _id: 2, item: 'ink', qty: 1 });
    await coll.deleteOne({ _id: 2 });

    await until(() => emitted.length >= 4, 'four change events on the emitter');
    out.emitted = emitted.slice();
    await emitter.close();
    out.emitterErrors = emitterErrors;

    out.iterated = [];
    const guard = setTimeout(() => iterated.close(), TIMEOUT_MS); // ends the loop if events are missing
    for await (const event of iterated) {
      out.iterated.push(event);
      if (out.iterated.length === 4) break;
    }
    clearTimeout(guard);
    out.iteratedResumeToken = iterated.resumeToken;
    await iterated.close();

    // Resume from a saved token (the update's): the events after it, then new ones.
    const saved = JSON.parse(JSON.stringify(out.emitted[1]._id)); // a token as an application stores it
    const resumed = coll.watch([], { ...options, resumeAfter: saved });
    out.resumed = await tryNextN(resumed, 2);
    await coll.insertOne({ _id: 3, item: 'cap', qty: 7 });
    out.resumedLater = await tryNextN(resumed, 1);
    out.resumedExtra = await resumed.tryNext();
    await resumed.close();

    out.failedCommands = commands.filter((c) => !c.ok);
    await emit(out);
  } finally {
    await client.close();
  }
});

'use strict';
// Indexes, a duplicate key error, and an ordered bulkWrite that stops at a failing op.
const { MongoServerError, MongoBulkWriteError } = require('mongodb');
const { parseArgs, monitoredClient, emit, run } = require('./common');

function describe(err) {
  return {
    name: err.name,
    isServerError: err instanceof MongoServerError,
    isBulkWriteError: err instanceof MongoBulkWriteError,
    code: err.code,
    message: String(err.message),
    keyPattern: err.keyPattern,
    keyValue: err.keyValue,
  };
}

run(async () => {
  const { uri, dbName } = parseArgs();
  const { client } = monitoredClient(uri);
  await client.connect();
  try {
    const coll = client.db(dbName).collection('users');
    const out = {};

    out.createIndex = await coll.createIndex({ email: 1 }, { unique: true, name: 'email_unique' });
    out.createCompound = await coll.createIndex({ last: 1, first: -1 });
    out.listIndexes = (await coll.listIndexes().toArray()).map((ix) => ({ name: ix.name, key: ix.key, unique: ix.unique }));

    await coll.insertOne({ _id: 1, email: 'a@example.com', last: 'A', first: 'a' });
    try {
      await coll.insertOne({ _id: 2, email: 'a@example.com' });
      out.duplicateKey = null;
    } catch (err) {
      out.duplicateKey = describe(err);
    }
    try {
      await coll.insertOne({ _id: 1, email: 'other@example.com' });
      out.duplicateId = null;
    } catch (err) {
      out.duplicateId = describe(err);
    }

    try {
      await coll.bulkWrite(
        [
          { insertOne: { document: { _id: 10, email: 'b@example.com' } } },
          { insertOne: { document: { _id: 11, email: 'c@example.com' } } },
          { insertOne: { document: { _id: 12, email: 'a@example.com' } } }, // duplicate email
          { insertOne: { document: { _id: 13, email: 'd@example.com' } } }, // never runs: ordered
        ],
        { ordered: true },
      );
      out.bulk = null;
    } catch (err) {
      out.bulk = {
        ...describe(err),
        insertedCount: err.insertedCount,
        resultInsertedCount: err.result ? err.result.insertedCount : undefined,
        insertedIds: err.insertedIds,
        writeErrors: (Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors]).map((we) => ({
          index: we.index,
          code: we.code,
        })),
      };
    }

    // An unordered bulk goes on past the failure.
    try {
      await coll.bulkWrite(
        [
          { insertOne: { document: { _id: 20, email: 'a@example.com' } } },
          { insertOne: { document: { _id: 21, email: 'e@example.com' } } },
          { updateOne: { filter: { _id: 10 }, update: { $set: { vip: true } } } },
        ],
        { ordered: false },
      );
      out.unordered = null;
    } catch (err) {
      out.unordered = {
        name: err.name,
        insertedCount: err.insertedCount,
        modifiedCount: err.modifiedCount,
        writeErrors: (Array.isArray(err.writeErrors) ? err.writeErrors : [err.writeErrors]).map((we) => ({
          index: we.index,
          code: we.code,
        })),
      };
    }

    out.ids = (await coll.find({}, { projection: { _id: 1 } }).sort({ _id: 1 }).toArray()).map((d) => d._id);
    await emit(out);
  } finally {
    await client.close();
  }
});

'use strict';
// CRUD, cursors (getMore, early close -> killCursors), countDocuments, aggregate.
// The documents are made here and again in test_node_driver.py (make_items).
const { parseArgs, monitoredClient, emit, run } = require('./common');

run(async () => {
  const { uri, dbName } = parseArgs();
  const { client, commands } = monitoredClient(uri);
  await client.connect();
  try {
    const coll = client.db(dbName).collection('items');
    const out = {};

    const one = await coll.insertOne({ _id: 0, name: 'zero', group: 'a', qty: 5, tags: ['x'] });
    out.insertOne = { acknowledged: one.acknowledged, insertedId: one.insertedId };

    const docs = [];
    for (let i = 1; i < 25; i++) {
      docs.push({ _id: i, name: `item${i}`, group: ['a', 'b', 'c'][i % 3], qty: i * 2, tags: i % 2 ? ['odd'] : ['even'] });
    }
    const many = await coll.insertMany(docs);
    out.insertMany = { acknowledged: many.acknowledged, insertedCount: many.insertedCount };

    // 7 of 10 matches with batchSize 3: a find, then getMores (3 + 3 + 1).
    const mark = commands.length;
    out.find = await coll
      .find({ qty: { $gte: 20 }, group: { $in: ['a', 'b'] } }, { projection: { qty: 1, name: 1 } })
      .sort({ qty: -1 })
      .limit(7)
      .batchSize(3)
      .toArray();
    out.findCommands = commands.slice(mark);

    const upd = await coll.updateOne({ _id: 3 }, { $inc: { qty: 100 }, $set: { name: 'three', 'meta.touched': true } });
    out.updateOne = { matchedCount: upd.matchedCount, modifiedCount: upd.modifiedCount, upsertedCount: upd.upsertedCount };
    out.afterUpdate = await coll.findOne({ _id: 3 });

    const upsert = await coll.updateOne({ _id: 100 }, { $set: { name: 'upserted' } }, { upsert: true });
    out.upsert = { matchedCount: upsert.matchedCount, upsertedCount: upsert.upsertedCount, upsertedId: upsert.upsertedId };

    const del = await coll.deleteMany({ tags: 'odd' });
    out.deleteMany = { acknowledged: del.acknowledged, deletedCount: del.deletedCount };

    out.countAll = await coll.countDocuments();
    out.countGroupA = await coll.countDocuments({ group: 'a' });
    out.estimated = await coll.estimatedDocumentCount();

    out.aggregate = await coll
      .aggregate([
        { $match: { group: { $exists: true } } },
        { $group: { _id: '$group', total: { $sum: '$qty' }, n: { $sum: 1 } } },
        { $sort: { total: -1 } },
      ])
      .toArray();

    // Close a cursor that still has batches on the server: the driver sends killCursors.
    const early = commands.length;
    const cursor = coll.find({}).sort({ _id: 1 }).batchSize(2);
    out.firstOfEarlyClosed = await cursor.next();
    await cursor.close();
    out.earlyCloseCommands = commands.slice(early);

    out.failedCommands = commands.filter((c) => !c.ok);
    await emit(out);
  } finally {
    await client.close();
  }
});

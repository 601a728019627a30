'use strict';
// BSON types across the wire both ways: read back what pymongo wrote to
// `types`, then insert one document built with the driver's own BSON classes.
const { BSON } = require('mongodb');
const { parseArgs, monitoredClient, emit, run } = require('./common');

const { ObjectId, Int32, Long, Double, Decimal128, Binary, UUID, BSONRegExp, Timestamp, MinKey, MaxKey } = BSON;

run(async () => {
  const { uri, dbName } = parseArgs();
  const { client } = monitoredClient(uri);
  await client.connect();
  try {
    const coll = client.db(dbName).collection('types');
    const out = {};
    out.fromPython = await coll.find({ _id: 'from-python' }).toArray();
    const fromNode = {
      _id: 'from-node',
      oid: new ObjectId('65a1b2c3d4e5f60718293a4b'),
      int32: new Int32(-7),
      long: Long.fromString('9007199254740993'),
      double: new Double(2.5),
      decimal: Decimal128.fromString('1234.5678901234567890'),
      date: new Date('2024-02-29T12:34:56.789Z'),
      bin: new Binary(Buffer.from([0, 1, 2, 255])),
      uuid: new UUID('0f8fad5b-d9cb-469f-a165-70867728950e'),
      regex: new BSONRegExp('^ab+c$', 'i'),
      ts: new Timestamp({ t: 1700000000, i: 3 }),
      min: new MinKey(),
      max: new MaxKey(),
      yes: true,
      none: null,
      text: 'héllo, wörld ✓',
      nested: { arr: [1, 'two', { three: [3] }], empty: {} },
    };
    await coll.insertOne(fromNode);
    out.fromNodeReadBack = await coll.findOne({ _id: 'from-node' });
    out.typeMatches = await coll.countDocuments({ _id: 'from-node', long: { $type: 'long' }, decimal: { $type: 'decimal' } });
    await emit(out);
  } finally {
    await client.close();
  }
});

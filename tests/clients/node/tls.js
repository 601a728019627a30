'use strict';
// TLS: connect with the URI given (tls=true&tlsCAFile=..., and for MONGODB-X509 a client
// certificate), write and read a document, and report who the server says we are.
const { MongoClient } = require('mongodb');
const { parseArgs, emit, run } = require('./common');

run(async () => {
  const { uri, dbName } = parseArgs();
  const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000 });
  try {
    const db = client.db(dbName);
    await db.collection('notes').insertOne({ _id: 1, text: 'over TLS' });
    const found = await db.collection('notes').findOne({ _id: 1 });
    const status = await db.admin().command({ connectionStatus: 1 });
    await emit({ found, users: status.authInfo.authenticatedUsers });
  } catch (err) {
    await emit({ error: { name: err.name, message: String(err.message) } });
  } finally {
    await client.close();
  }
});

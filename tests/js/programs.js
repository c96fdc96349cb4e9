// The consumer-group programs of tests/test_reference_clients.py, written with ioredis.
// Usage: node programs.js PORT MIN_IDLE_MS CLOCK   (CLOCK: "virtual" moves time with
// XSPEC.CLOCK ADVANCE, "wall" sleeps). Prints one JSON object with what each program saw.
'use strict';
const Redis = require('ioredis');

const [port, minIdle, clock] = [Number(process.argv[2]), Number(process.argv[3]), process.argv[4]];
const connect = () => new Redis({ port, host: '127.0.0.1', lazyConnect: false, maxRetriesPerRequest: 0 });

async function letTimePass(r, ms) {
  if (clock === 'virtual') {
    await r.call('XSPEC.CLOCK', 'ADVANCE', String(ms + 1));
  } else {
    await new Promise((resolve) => setTimeout(resolve, ms + 15));
  }
}

async function waitBlocked(r, count) {
  for (;;) {
    const info = await r.info('clients');
    if (Number(/blocked_clients:(\d+)/.exec(info)[1]) >= count) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

// The seed documents' consumer loop: history from ID 0 until it is empty, then '>', XACK each.
async function consumerLoop(r, producer) {
  await r.xgroup('CREATE', 'orders', 'workers', '0', 'MKSTREAM');
  for (let i = 1; i <= 6; i++) await r.xadd('orders', `${i}-0`, 'n', String(i));
  const crashed = await r.xreadgroup('GROUP', 'workers', 'alice', 'COUNT', '3', 'STREAMS', 'orders', '>');
  const processed = [];
  let lastId = '0-0';
  let checkBacklog = true;
  while (processed.length < 8) {
    const myId = checkBacklog ? lastId : '>';
    if (!checkBacklog && processed.length === 6) {
      waitBlocked(producer, 1).then(() => producer.xadd('orders', '7-0', 'n', '7'))
        .then(() => producer.xadd('orders', '8-0', 'n', '8'));
    }
    const items = await r.xreadgroup('GROUP', 'workers', 'alice', 'BLOCK', '2000', 'COUNT', '10',
      'STREAMS', 'orders', myId);
    if (items === null) continue;
    if (items[0][1].length === 0) checkBacklog = false;
    for (const [id, fields] of items[0][1]) {
      processed.push([id, fields]);
      await r.xack('orders', 'workers', id);
      lastId = id;
    }
  }
  const pending = await r.xpending('orders', 'workers');
  return { crashed, processed, pending };
}

// The XAUTOCLAIM recovery worker of the seed, with its poison-pill limit and a dead-letter stream.
async function recoveryWorker(r) {
  await r.xgroup('CREATE', 'jobs', 'workers', '0', 'MKSTREAM');
  for (let i = 1; i <= 5; i++) await r.xadd('jobs', `${i}-0`, 'n', String(i), 'poison', i === 3 ? 'yes' : 'no');
  await r.xreadgroup('GROUP', 'workers', 'crashed', 'STREAMS', 'jobs', '>');
  const tooEarly = await r.xautoclaim('jobs', 'workers', 'recovery', minIdle, '0-0', 'COUNT', '10');
  const cycles = [];
  for (let cycle = 0; cycle < 6 && (await r.xpending('jobs', 'workers'))[0] > 0; cycle++) {
    await letTimePass(r, minIdle);
    const claimed = [];
    let cursor = '0-0';
    do {
      const [next, messages] = await r.xautoclaim('jobs', 'workers', 'recovery', minIdle, cursor, 'COUNT', '2');
      cursor = next;
      for (const [id, fields] of messages) {
        const [[, , , deliveries]] = await r.xpending('jobs', 'workers', id, id, 1);
        claimed.push([id, deliveries]);
        if (deliveries > 3) {
          await r.xadd('jobs:dead', '*', 'id', id, ...fields);
          await r.xack('jobs', 'workers', id);
        } else if (fields[3] === 'no') {
          await r.xack('jobs', 'workers', id);
        }
      }
    } while (cursor !== '0-0');
    cycles.push(claimed);
  }
  const dead = (await r.xrange('jobs:dead', '-', '+')).map(([, fields]) => fields);
  return { tooEarly, cycles, dead, pending: await r.xpending('jobs', 'workers') };
}

async function main() {
  const r = connect();
  const producer = connect();
  try {
    await r.flushall();
    const result = { consumerLoop: await consumerLoop(r, producer), recoveryWorker: await recoveryWorker(r) };
    process.stdout.write(JSON.stringify(result));
  } finally {
    r.disconnect();
    producer.disconnect();
  }
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err));
  process.exit(1);
});

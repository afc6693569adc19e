'use strict';

const { formatList } = require('./format.js');

/** Run one command against the store; returns what to print. */
function run(argv, store) {
  const [command, ...rest] = argv;
  if (command === 'add') {
    const item = store.add(rest.join(' '));
    return `added ${item.id}`;
  }
  if (command === 'list') {
    return formatList(store.list());
  }
  throw new Error(`unknown command: ${command}`);
}

module.exports = { run };

'use strict';

function formatTodo(item) {
  return `${item.id}. [ ] ${item.title}`;
}

function formatList(items) {
  return items.length === 0 ? 'nothing to do' : items.map(formatTodo).join('\n');
}

module.exports = { formatList, formatTodo };

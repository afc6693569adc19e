'use strict';

class TodoStore {
  constructor() {
    this.items = [];
    this.nextId = 1;
  }

  add(title) {
    const text = String(title ?? '').trim();
    if (!text) {
      throw new Error('a todo needs a title');
    }
    const item = { id: this.nextId, title: text };
    this.nextId += 1;
    this.items.push(item);
    return { ...item };
  }

  list() {
    return this.items.map((item) => ({ ...item }));
  }
}

module.exports = { TodoStore };

'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { range, rangeSum } = require('../src/range.js');

test('includes both ends', () => {
  assert.deepEqual(range(1, 3), [1, 2, 3]);
});

test('a single number', () => {
  assert.deepEqual(range(5, 5), [5]);
});

test('empty when end is before start', () => {
  assert.deepEqual(range(3, 1), []);
});

test('sum of 1..10', () => {
  assert.equal(rangeSum(1, 10), 55);
});

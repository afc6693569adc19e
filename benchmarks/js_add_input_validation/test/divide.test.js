'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { divide } = require('../src/divide.js');

test('divides', () => {
  assert.equal(divide(10, 4), 2.5);
});

test('zero divisor is a RangeError', () => {
  assert.throws(() => divide(1, 0), RangeError);
});

test('strings are a TypeError', () => {
  assert.throws(() => divide('6', 3), TypeError);
  assert.throws(() => divide(6, '3'), TypeError);
});

test('NaN and Infinity are a TypeError', () => {
  assert.throws(() => divide(NaN, 1), TypeError);
  assert.throws(() => divide(1, Infinity), TypeError);
});

test('missing arguments are a TypeError', () => {
  assert.throws(() => divide(1), TypeError);
});

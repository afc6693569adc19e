'use strict';

/**
 * The integers from start to end, both included; empty when end < start.
 */
function range(start, end) {
  const out = [];
  for (let i = start; i < end; i += 1) {
    out.push(i);
  }
  return out;
}

/** The sum of range(start, end). */
function rangeSum(start, end) {
  return range(start, end).reduce((total, n) => total + n, 0);
}

module.exports = { range, rangeSum };

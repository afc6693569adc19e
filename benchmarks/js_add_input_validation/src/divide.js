'use strict';

/** a / b. */
function divide(a, b) {
  return a / b;
}

module.exports = { divide };

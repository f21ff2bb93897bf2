'use strict';
// Piscina worker entry, CommonJS on purpose. Piscina require()s its worker file before it tries
// import(), and since Node 20.19 require() loads an ES module too: the .mjs entry (a top-level
// await) usually threw ERR_REQUIRE_ASYNC_MODULE and was then imported, but now and then Node
// aborted the whole process instead ("FATAL ERROR: v8::Module::IsGraphAsync must be used on an
// instantiated module", seen once in a CI run of the test suite). A CommonJS file is required
// plainly, and the ES module is imported the ordinary, asynchronous way.
const handler = import('./pool-thread-bootstrap.mjs').then((m) => m.default);
// a module that fails to load fails every task (the first is the backend's load) with its error
handler.catch(() => {});

module.exports = async function handle(task) {
  return (await handler)(task);
};

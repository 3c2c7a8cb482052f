package etcd

// RunFor is runFor, for the tests that need to know whether a step came
// within a session's run.
const RunFor = runFor

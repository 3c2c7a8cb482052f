package lock

// HandoverEnv is the variable through which HandOver names the inherited
// descriptors, for the tests that forge it.
const HandoverEnv = handoverEnv

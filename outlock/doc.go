// Package outlock is the lock a command holds on what it writes, so that
// two runs writing one output never interleave: an OS advisory lock
// (flock(2)) on a small lock file beside the output. A second writer fails
// at once with an error naming the holder (pid, command line, start time).
// The kernel releases the lock when its process exits, however it exits, so
// a lock left by a killed run never blocks the next one.
//
// Holding the lock, Take removes the temporary files of the output that a
// killed run left (package atomicfile names them); Holdings let a run
// stopped by SIGINT or SIGTERM remove its own before it exits.
//
// The lock of an output (folder or file) is .<name>.ftk-lock beside it.
// Its holder removes the file, still holding the lock, when it releases
// (or is stopped by SIGINT or SIGTERM: Holdings.Interrupt); a run killed
// with SIGKILL leaves it for the next one, which locks it again; a lock
// file left by another user's run, which this process may not write (nor,
// in a sticky shared folder, remove), is locked through a read-only open
// and left as it is. Removing a lock file could let a
// process that opened it just before lock the removed file while a third
// creates and locks a new one; so a taker that gets the lock checks that
// the path still names the file it locked, and tries again when not.
package outlock

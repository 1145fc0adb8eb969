package secrets

// process holds every secret this process planted (see Process).
var process Set

// Process is the set of every secret this process planted (the kit's configuration canaries register
// themselves here when made). Reports mask with the secrets of their own run; Process is the last resort for
// text that leaves the kit by another way, such as an error message printed when a run could not decide.
func Process() *Set { return &process }

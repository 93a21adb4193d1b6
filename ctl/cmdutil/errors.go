package cmdutil

import "fmt"

// ExitError carries a remote command's exit status to kobectl's own, or
// a status other than 1 for err (kobectl diff: 1 means differences).
// quiet ones print nothing more (auth can-i has said "no" already).
type ExitError struct {
	Code  int
	Quiet bool
	Err   error
}

func (e ExitError) Error() string {
	if e.Err != nil {
		return e.Err.Error()
	}
	return fmt.Sprintf("command terminated with exit code %d", e.Code)
}

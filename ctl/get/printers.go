package get

import "github.com/kobune/kobune/api/printers"

// The columns live in api/printers, shared with the API server's Tables.
var (
	podStatus      = printers.PodStatus
	firstFew       = printers.FirstFew
	none           = printers.None
	sinceOrUnknown = printers.SinceOrUnknown
	nodeRoles      = printers.NodeRoles
)

package simulate

import "github.com/ftk-dev/ftk/cost"

// CostModel prices one engine step on one pipeline stage.
type CostModel interface {
	// StageCost overwrites c with the cost of batch b on stage (0-based).
	StageCost(b *cost.BatchShape, stage int, c *cost.StepCost)
}

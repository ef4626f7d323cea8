package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/ftk-dev/ftk/roofline"
	"github.com/ftk-dev/ftk/spec"
	"github.com/urfave/cli/v3"
)

// layoutFlags are the parallel-layout flags, under ftk's short names and
// vLLM's engine-argument names (vllm/engine/arg_utils.py), which mean the
// same: --tensor-parallel-size, --pipeline-parallel-size,
// --data-parallel-size, and --enable-expert-parallel (EP over the TP x DP
// GPUs, as vLLM places experts).
func layoutFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "tp", Aliases: []string{"tensor-parallel-size"}, Value: 1, Usage: "tensor-parallel degree"},
		&cli.IntFlag{Name: "pp", Aliases: []string{"pipeline-parallel-size"}, Value: 1, Usage: "pipeline-parallel degree"},
		&cli.IntFlag{Name: "ep", Value: 1, Usage: "expert-parallel degree (MoE models)"},
		&cli.IntFlag{Name: "dp", Aliases: []string{"data-parallel-size"}, Value: 1, Usage: "data-parallel degree"},
		&cli.BoolFlag{Name: "enable-expert-parallel", Usage: "expert parallelism over every GPU of the layout, --ep = --tp x --dp (vLLM's flag)"},
	}
}

// layoutFrom reads the layout flags.
func layoutFrom(cmd *cli.Command) (spec.Layout, error) {
	l := spec.Layout{TP: cmd.Int("tp"), PP: cmd.Int("pp"), EP: cmd.Int("ep"), DP: cmd.Int("dp")}
	return l, expertParallel(cmd, &l)
}

// expertParallel applies --enable-expert-parallel to l: vLLM spreads the
// experts over the TP x DP GPUs of a pipeline stage. An --ep that says
// otherwise is a usage error.
func expertParallel(cmd *cli.Command, l *spec.Layout) error {
	if !cmd.Bool("enable-expert-parallel") {
		return nil
	}
	ep := max(l.TP, 1) * max(l.DP, 1)
	if cmd.IsSet("ep") && l.EP != ep {
		return usageError("--enable-expert-parallel spreads experts over --tp x --dp = %d GPUs, but --ep is %d: give one of them", ep, l.EP)
	}
	l.EP = ep
	return nil
}

// modelAndLayout resolves the single MODEL argument and the layout flags.
func modelAndLayout(cmd *cli.Command) (*spec.Model, spec.Layout, error) {
	if cmd.Args().Len() != 1 {
		return nil, spec.Layout{}, usageError("%s needs one MODEL argument (a catalog name or a config.json path); see 'ftk models list'", cmd.FullName())
	}
	m, err := spec.LookupModel(cmd.Args().First())
	if errors.Is(err, spec.ErrUnknownModel) {
		return nil, spec.Layout{}, usageError("%v", err)
	}
	if err != nil {
		return nil, spec.Layout{}, err
	}
	l, err := layoutFrom(cmd)
	if err != nil {
		return nil, spec.Layout{}, err
	}
	if err := l.Validate(m); err != nil {
		return nil, spec.Layout{}, err
	}
	return m, l.Normalize(), nil
}

func modelsCommand() *cli.Command {
	return &cli.Command{
		Name:  "models",
		Usage: "list, show and break down model architectures",
		Description: `Models come from the built-in catalog or from a Hugging Face style config.json.

Examples:
  ftk models list
  ftk models show qwen3-30b-a3b --tp 8 --ep 8
  ftk models show testdata/models/deepseek-v3.json
  ftk models ops qwen3-30b-a3b --tp 8 --ep 8 --tokens 256`,
		Commands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list the built-in model catalog (--model takes a NAME or its HUGGING FACE ID)",
				Action: func(_ context.Context, cmd *cli.Command) error {
					w := tabwriter.NewWriter(cmd.Root().Writer, 0, 0, 2, ' ', 0)
					fmt.Fprintln(w, "NAME\tHUGGING FACE ID\tARCHITECTURE\tLAYERS\tHIDDEN\tEXPERTS\tPARAMS\tACTIVE")
					for _, n := range spec.ModelNames() {
						m, _ := spec.LookupModel(n)
						total, active := m.Params()
						experts := "-"
						if m.IsMoE() {
							experts = fmt.Sprintf("%d (top-%d)", m.NumExperts, m.TopK)
						}
						hub := m.HubID
						if hub == "" {
							hub = "-"
						}
						fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", n, hub, m.Architecture, m.NumLayers, m.HiddenSize, experts, billions(total), billions(active))
					}
					return w.Flush()
				},
			},
			{
				Name:      "show",
				Usage:     "print a model's architecture, parameter counts and memory per GPU",
				ArgsUsage: "MODEL",
				Flags:     layoutFlags(),
				Action: func(_ context.Context, cmd *cli.Command) error {
					m, l, err := modelAndLayout(cmd)
					if err != nil {
						return err
					}
					total, active := m.Params()
					w := tabwriter.NewWriter(cmd.Root().Writer, 0, 0, 2, ' ', 0)
					fmt.Fprintf(w, "model\t%s (%s)\n", m.Name, m.Architecture)
					fmt.Fprintf(w, "layers\t%d\n", m.NumLayers)
					fmt.Fprintf(w, "hidden size\t%d\n", m.HiddenSize)
					fmt.Fprintf(w, "attention\t%d heads, %d KV heads, head dim %d%s\n", m.NumHeads, m.NumKVHeads, m.HeadDim, mlaNote(m))
					if m.AttentionWindow > 0 {
						global := "none"
						if m.GlobalAttentionEvery > 0 {
							global = fmt.Sprintf("every %d", m.GlobalAttentionEvery)
						}
						fmt.Fprintf(w, "local attention\twindow %d tokens, global layers: %s\n", m.AttentionWindow, global)
					}
					if m.IsMoE() {
						fmt.Fprintf(w, "experts\t%d routed (top-%d), width %d, %d shared, first %d layers dense\n", m.NumExperts, m.TopK, m.MoEIntermediateSize, m.SharedExperts, m.FirstDenseLayers)
					} else {
						fmt.Fprintf(w, "MLP width\t%d\n", m.IntermediateSize)
					}
					fmt.Fprintf(w, "vocabulary\t%d\n", m.VocabSize)
					if m.Quantization != "" {
						fmt.Fprintf(w, "quantization\t%s (%d-byte layer weights)\n", m.Quantization, m.WeightBytes)
					}
					if m.Note != "" {
						fmt.Fprintf(w, "note\t%s\n", m.Note)
					}
					fmt.Fprintf(w, "parameters\t%s total, %s active per token\n", billions(total), billions(active))
					fmt.Fprintf(w, "layout\t%s (%d GPUs)\n", l, l.GPUs())
					fmt.Fprintf(w, "weights per GPU\t%.2f GiB\n", float64(m.WeightBytesPerGPU(l))/(1<<30))
					fmt.Fprintf(w, "KV cache per token\t%d bytes per GPU (%d per layer)\n", m.KVBytesPerToken(l), m.KVBytesPerTokenLayer(l.TP))
					return w.Flush()
				},
			},
			{
				Name:      "ops",
				Usage:     "print the operators one layer runs on one GPU, with per-GPU shapes and what vLLM issues for each",
				ArgsUsage: "MODEL",
				Flags: append(layoutFlags(),
					&cli.IntFlag{Name: "layer", Usage: "layer index (0-based)", Value: -1},
					&cli.IntFlag{Name: "tokens", Usage: "tokens in the batch, for the FLOPs column", Value: 1},
					&cli.StringFlag{Name: "device", Usage: "device whose host class prices the eager issue column", Value: "h100"}),
				Action: func(_ context.Context, cmd *cli.Command) error {
					m, l, err := modelAndLayout(cmd)
					if err != nil {
						return err
					}
					layer := cmd.Int("layer")
					if layer < 0 {
						layer = m.NumLayers - 1 // the last layer is MoE in every MoE model
					}
					if layer >= m.NumLayers {
						return usageError("--layer %d: %s has layers 0..%d", layer, m.Name, m.NumLayers-1)
					}
					tokens := cmd.Int("tokens")
					if tokens < 1 {
						return usageError("--tokens must be at least 1")
					}
					dev, err := spec.LookupDevice(cmd.String("device"))
					if err != nil {
						return err
					}
					costs := roofline.DefaultIssueCosts(dev)
					w := tabwriter.NewWriter(cmd.Root().Writer, 0, 0, 2, ' ', 0)
					fmt.Fprintf(w, "%s layer %d on one GPU of %s, %d tokens (prefill, no context; experts evenly loaded)\n", m.Name, layer, l, tokens)
					fmt.Fprintln(w, "OP\tFAMILY\tKERNELS\tPER-GPU SHAPE\tFEATURES\tVLLM ISSUES\tEAGER HOST us")
					var hostUs float64
					var total spec.OpIssue
					for _, o := range spec.LayerOps(m, l, layer) {
						is := roofline.IssueOf(m, l, &o)
						us := costs.OpUs(is)
						hostUs += us
						total.Modules, total.Calls = total.Modules+is.Modules, total.Calls+is.Calls
						for k, n := range is.Kernels {
							total.Kernels[k] += n
						}
						fmt.Fprintf(w, "%s\t%s\t%d\t%s\t%v\t%s\t%.1f\n", o.Name, o.Family, o.Kernels, o.Shape(), spec.OpFeatures(o.Name), issueText(is), us)
					}
					fmt.Fprintf(w, "layer FLOPs\t%.4g\n", spec.LayerFLOPs(m, l, layer, tokens))
					fmt.Fprintf(w, "layer issue\t%s, %.0f us of host time in eager mode\n", issueText(total), hostUs)
					fmt.Fprintf(w, "issue costs\t%s\n", costs.Describe())
					fmt.Fprintf(w, "inventory\tread from %s\n", roofline.VLLMSource)
					return w.Flush()
				},
			},
		},
	}
}

// issueText renders what the host issues for an op: module frames,
// kernel-less dispatcher calls and kernels by kind.
func issueText(is spec.OpIssue) string {
	s := fmt.Sprintf("%d mod %d call", is.Modules, is.Calls)
	for k, n := range is.Kernels {
		if n > 0 {
			s += fmt.Sprintf(" %d %s", n, spec.KernelKind(k))
		}
	}
	return s
}

func mlaNote(m *spec.Model) string {
	if m.IsMLA() {
		return fmt.Sprintf(" (MLA: kv_lora_rank %d, rope dim %d)", m.KVLoraRank, m.QKRopeHeadDim)
	}
	return ""
}

func billions(n int64) string { return fmt.Sprintf("%.2fB", float64(n)/1e9) }

func devicesCommand() *cli.Command {
	return &cli.Command{
		Name:  "devices",
		Usage: "list and show the device catalog",
		Commands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list known devices",
				Action: func(_ context.Context, cmd *cli.Command) error {
					w := tabwriter.NewWriter(cmd.Root().Writer, 0, 0, 2, ' ', 0)
					fmt.Fprintln(w, "NAME\tDESCRIPTION\tBF16 TFLOPS\tMEMORY GiB\tHBM GB/s\tSMs\tNVLINK GB/s\tLAUNCH us")
					for _, n := range spec.DeviceNames() {
						d, _ := spec.LookupDevice(n)
						fmt.Fprintf(w, "%s\t%s\t%g\t%g\t%g\t%d\t%g\t%g\n", d.Name, d.Description, d.PeakBF16TFLOPS, d.MemoryGiB, d.HBMGBps, d.SMs, d.NVLinkGBps, d.LaunchUs)
					}
					return w.Flush()
				},
			},
			{
				Name:      "show",
				Usage:     "show one device",
				ArgsUsage: "DEVICE",
				Action: func(_ context.Context, cmd *cli.Command) error {
					if cmd.Args().Len() != 1 {
						return usageError("devices show needs one DEVICE argument; see 'ftk devices list'")
					}
					d, err := spec.LookupDevice(cmd.Args().First())
					if err != nil {
						return usageError("%v", err)
					}
					w := tabwriter.NewWriter(cmd.Root().Writer, 0, 0, 2, ' ', 0)
					fmt.Fprintf(w, "name\t%s (%s)\n", d.Name, d.Description)
					fmt.Fprintf(w, "dense BF16 peak\t%g TFLOP/s\n", d.PeakBF16TFLOPS)
					if d.MatmulBF16TFLOPS > 0 {
						fmt.Fprintf(w, "BF16 matmul measured\t%g TFLOP/s (public torch.mm rows: compute priced at %.3f x the peak's roofs)\n", d.MatmulBF16TFLOPS, roofline.NewDevice(d).ClockScale())
					}
					fmt.Fprintf(w, "memory\t%g GiB at %g GB/s\n", d.MemoryGiB, d.HBMGBps)
					fmt.Fprintf(w, "SMs\t%d\n", d.SMs)
					fmt.Fprintf(w, "NVLink\t%g GB/s per direction\n", d.NVLinkGBps)
					fmt.Fprintf(w, "kernel launch\t%g us (eager), kernel floor %g us\n", d.LaunchUs, d.KernelFloorUs)
					return w.Flush()
				},
			},
		},
	}
}

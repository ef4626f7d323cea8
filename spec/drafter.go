package spec

import "fmt"

// OpSpecFusion is the speculative head's fusion layer (Drafter.FusionOp):
// a GEMM no profile measures, priced by the roofline.
const OpSpecFusion = "spec_fusion_proj"

// eagle3DraftVocab is the LM head width of the public EAGLE-3 heads when
// draft_vocab_size is not given: yuhuili/EAGLE3-LLaMA3.1-Instruct-8B's
// config.json on the Hugging Face hub ("draft_vocab_size": 32000), the head
// vLLM's EAGLE-3 examples load (vllm/model_executor/models/llama_eagle3.py
// reads draft_vocab_size for its lm_head).
const eagle3DraftVocab = 32000

// Drafter is the GPU work of a speculative decoding drafter, as vLLM V1
// runs it (vllm/v1/spec_decode/eagle.py, EagleProposer.propose; the
// draft_model proposer follows the same passes): each step, one pass over
// every token the target just ran (the verified tokens and prefill chunks,
// logits of the last token of each request), then K-1 passes of one token
// per request, each pass running Model's layers, embedding and LM head.
type Drafter struct {
	// Model is what one pass runs: for eagle and eagle3 one dense decoder
	// layer of the target's attention and MLP shapes; for mtp one decoder
	// layer of the target's last layer's kind (MoE on an MoE target: the
	// MTP module of DeepSeek-V3 is a full MoE block); for draft_model the
	// draft model. Its vocabulary is the LM head the drafter computes.
	Model *Model
	// FusionWidth is the input width, in hidden sizes, of the layer that
	// fuses the target's hidden states into the head's input (a replicated
	// GEMM to one hidden size): EAGLE's fc over [embedding, hidden] (2) and
	// DeepSeek MTP's eh_proj over the same (2), run every pass; EAGLE-3's
	// fc over three of the target's hidden states (3), which vLLM runs on
	// the first pass only while later passes feed [embedding, hidden] (2h)
	// into the layer's QKV projection: ftk prices the 3h fc in every pass
	// in place of that wider QKV input (a stated approximation). 0: none
	// (draft_model).
	FusionWidth int
	// SharesEmbedding says the embedding is the target's (heads and MTP);
	// SharesLMHead that the LM head is too (eagle, mtp; an EAGLE-3 head
	// has its own of its draft vocabulary). Shared weights take no memory.
	SharesEmbedding, SharesLMHead bool
}

// Drafter returns the drafter of s for target; ngram has none (nil Model).
// draft_model resolves s.Model with LookupModel.
func (s *Speculative) Drafter(target *Model) (Drafter, error) {
	switch s.Method {
	case SpecNgram:
		return Drafter{}, nil
	case SpecDraftModel:
		m, err := LookupModel(s.Model)
		if err != nil {
			return Drafter{}, fmt.Errorf("speculative decoding draft_model: %w", err)
		}
		if m.VocabSize != target.VocabSize {
			return Drafter{}, fmt.Errorf("speculative decoding draft_model: %s has a vocabulary of %d tokens, %s of %d: vLLM needs the draft model to share the target's tokenizer", m.Name, m.VocabSize, target.Name, target.VocabSize)
		}
		return Drafter{Model: m}, nil
	}
	head := *target
	head.NumLayers, head.FirstDenseLayers, head.MoELayerStep = 1, 0, 0
	head.AttentionWindow, head.GlobalAttentionEvery = 0, 0
	d := Drafter{Model: &head, SharesEmbedding: true, SharesLMHead: true, FusionWidth: 2}
	switch s.Method {
	case SpecMTP:
		head.Name = "mtp module of " + target.Name
	case SpecEagle, SpecEagle3:
		head.Name = s.Method + " head of " + target.Name
		head.NumExperts, head.TopK, head.MoEIntermediateSize, head.SharedExperts, head.SharedExpertIntermediateSize = 0, 0, 0, 0, 0
		if head.IntermediateSize <= 0 {
			return Drafter{}, fmt.Errorf("speculative decoding %s: %s has no dense MLP width (intermediate_size) to size the head's layer", s.Method, target.Name)
		}
		if s.Method == SpecEagle3 {
			d.FusionWidth, d.SharesLMHead = 3, false
			head.VocabSize = eagle3DraftVocab
			if s.DraftVocabSize > 0 {
				head.VocabSize = s.DraftVocabSize
			}
		}
	default:
		return Drafter{}, fmt.Errorf("speculative decoding: unknown method %q", s.Method)
	}
	return d, nil
}

// Layout is the drafter's layout under the target's: the same GPUs, one
// pipeline stage (vLLM V1 runs the drafter on the target's last stage and
// takes the target's tensor-parallel size for it).
func (d *Drafter) Layout(l Layout) Layout {
	l = l.Normalize()
	l.PP = 1
	if d.Model != nil && !d.Model.IsMoE() {
		l.EP = 1
	}
	return l
}

// WeightBytesPerGPU is the drafter's own weights on one GPU: its layers,
// the fusion layer (replicated, BF16), and the embedding and LM head it
// does not share with the target.
func (d *Drafter) WeightBytesPerGPU(l Layout) int64 {
	if d.Model == nil {
		return 0
	}
	m, dl := d.Model, d.Layout(l)
	if !d.SharesEmbedding && !d.SharesLMHead {
		return m.WeightBytesPerGPU(dl)
	}
	var b int64
	for i := 0; i < m.NumLayers; i++ {
		b += m.layerWeightBytesPerGPU(i, dl)
	}
	h := int64(m.HiddenSize)
	b += int64(d.FusionWidth) * h * h * 2
	if !d.SharesLMHead {
		b += int64(m.VocabSize) * h / int64(dl.TP) * 2
	}
	return b
}

// KVBytesPerToken is the KV cache one token takes in the drafter's layers
// on one GPU: vLLM gives the draft layers KV cache in the same block pool
// as the target's, so a block holds both.
func (d *Drafter) KVBytesPerToken(l Layout) int64 {
	if d.Model == nil {
		return 0
	}
	return d.Model.KVBlockBytes(d.Layout(l), 1)
}

// FusionOp is the drafter's fusion layer as an operator (ok false when it
// has none): a replicated BF16 GEMM from FusionWidth hidden sizes to one.
func (d *Drafter) FusionOp() (Op, bool) {
	if d.Model == nil || d.FusionWidth == 0 {
		return Op{}, false
	}
	h := d.Model.HiddenSize
	return Op{Name: OpSpecFusion, Family: FamilyLinear, Kernels: 1, K: d.FusionWidth * h, N: h, ElemBytes: 2}, true
}

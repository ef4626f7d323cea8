# ftk: see README.md. Every target works on a fresh machine with only Go.
GO       ?= go
BIN      := bin/ftk
RUN      ?= run
# pipeline variables: override on the command line, e.g. make pipeline MODEL=llama-3.1-8b TP=1 EP=1
MODEL    ?= qwen3-30b-a3b
DEVICE   ?= h100
TP       ?= 8
EP       ?= 8
PP       ?= 1
WORKLOAD ?= fixed:1024x256
RATE     ?= 4
REQUESTS ?= 500
MAX_BATCHED_TOKENS ?= 8192
MAX_SEQS ?= 256
# MAX_MODEL_LEN 0: min(model's maximum, 8192) in collect, fit and simulate alike (spec.DefaultMaxModelLen)
MAX_MODEL_LEN ?= 0
# MEASUREMENT: the op times the bundle is fitted on. KERNEL_ONLY (kernel durations) lets simulate
# run CUDA graphs, as vLLM serves by default; CUDA_EVENT times hold eager launch gaps, so they
# price eager steps only.
MEASUREMENT ?= KERNEL_ONLY
GRAPH_NOTE := CUDA graphs from KERNEL_ONLY op times, as vLLM serves by default
EAGER_NOTE := eager: $(MEASUREMENT) op times hold eager launch gaps; MEASUREMENT=KERNEL_ONLY simulates CUDA graphs

.PHONY: build test deps bench pipeline fuzz clean gpu-check docs validation

VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo dev)

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/ftk

deps:
	@.ci/deps

test: deps
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) test ./...

bench: build
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 0 ./... 2>&1 | grep -v '^ok\|^PASS\|^goos\|^goarch\|^pkg\|^cpu'

# The main job, end to end on the built-in synthetic device model. Artifacts land in $(RUN)/:
#   profiles/  collect output (CSV + YAML)    dataset/  ingest output (Arrow + manifest.json)
#   bundle.arrow  fit output (model bundle)   sim/      simulate output (requests.csv/.arrow, summary.json, config.yaml)
LIMITS := --max-num-batched-tokens $(MAX_BATCHED_TOKENS) --max-num-seqs $(MAX_SEQS) --max-model-len $(MAX_MODEL_LEN)
LAYOUT := --tp $(TP) --ep $(EP) --pp $(PP)
pipeline: build
	@rm -rf $(RUN) && mkdir -p $(RUN)
	@echo "== 1/4 collect (synthetic $(DEVICE) device model; not a measurement)"
	$(BIN) collect all --backend synthetic --model $(MODEL) --device $(DEVICE) $(LAYOUT) $(LIMITS) -o $(RUN)/profiles
	@echo "== 2/4 ingest"
	$(BIN) ingest $(RUN)/profiles -o $(RUN)/dataset
	@echo "== 3/4 fit --check-coverage ($(MEASUREMENT) rows)"
	$(BIN) fit $(RUN)/dataset -o $(RUN)/bundle.arrow --measurement $(MEASUREMENT) --check-coverage --model $(MODEL) $(LAYOUT) $(LIMITS)
	@echo "== 4/4 simulate ($(if $(filter KERNEL_ONLY,$(MEASUREMENT)),$(GRAPH_NOTE),$(EAGER_NOTE)))"
	$(BIN) simulate --model $(MODEL) --device $(DEVICE) $(LAYOUT) $(LIMITS) --bundle $(RUN)/bundle.arrow \
		--workload $(WORKLOAD) --rate $(RATE) --num-requests $(REQUESTS) --seed 1 --breakdown -o $(RUN)/sim

# docs/validation.md: every public vLLM run the tests replay, measured against simulated
validation:
	FTK_UPDATE_DOCS=1 $(GO) test ./simulate -run '^TestPublicRuns$$' -count=1
	FTK_UPDATE_DOCS=1 $(GO) test ./cost -run '^TestRooflineVsKernelTablesDoc$$' -count=1
	FTK_UPDATE_DOCS=1 $(GO) test ./simulate -run '^TestPublicRunsFromKernelTables$$' -count=1
	FTK_UPDATE_DOCS=1 $(GO) test ./simulate -run '^TestKVOffloadingDoc$$' -count=1

# The generated parts of README.md (example outputs, the pipeline's output) and docs/validation.md
docs: validation
	FTK_UPDATE_DOCS=1 $(GO) test ./cmd/ftk -run '^(TestEveryExampleRuns|TestREADMEPipelineOutput)$$' -count=1

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParseRow -fuzztime 20s ./ingest/

clean:
	rm -rf bin $(RUN)

# On a machine with one NVIDIA GPU: collect, fit and simulate Llama-3.1-8B and
# Qwen3-30B-A3B at TP1 with the torch worker and print the built-in device
# model's per-operator error against the measured rows (scripts/gpu-check.sh).
gpu-check:
	scripts/gpu-check.sh

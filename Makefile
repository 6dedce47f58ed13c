# Every workflow of the attention exercise kit. Each target creates and reuses .venv/.
#   make test                      the kit's whole test suite (installs everything first)
#   make grade [SUBMISSION=PATH] [OUT=DIR] [RESULTS=FILE]   grade a file, folder or zip (default: the sample class)
#   make grade ENGINE=otter [SUBMISSION=PATH]   the same through `otter run` and the stock Otter autograder
#   make grade SUBMISSION=canvas.zip ROSTER=roster.csv   also OUT/canvas_grades.csv and OUT/moodle_grades.csv
#   make grade SHARD=2/4 OUT=out-2 ; make merge SHARDS="out-1 out-2 out-3 out-4"   spread a class
#   make bench [COUNT=200] [DEVICE=cuda]   speed and memory figures against the targets
#   make report [OUT=out]          the cohort report OUT/report.html from OUT/results (also after each bulk grade)
#   make diagnose-report           share of catalogue bugs whose feedback names the right cause
#   make student                   regenerate exercises/, student_template/ and samples/class/ from solutions/
#   make publish                   build dist/: student release, Otter, Gradescope and nbgrader autograders
#   make check STEP=masking [SUBMISSION=exercises/attention.py]   a student's public check of one step
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
OUT ?= out
SUBMISSION ?=
RESULTS ?=
STEP ?=
DEVICE ?= cpu
JOBS ?=
ENGINE ?= kit
SHARD ?=
SHARDS ?=
ROSTER ?=

.PHONY: test grade merge bench student check publish clean

# requirements.txt: what grading needs; requirements-publish.txt: the LMS tools (otter, nbgrader).
$(VENV)/.installed: requirements.txt requirements-publish.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt -r requirements-publish.txt
	touch $@

# Headless Chromium (Debian's package, no browser download) renders the feedback pages in tests/kit.
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	$(if $(filter 0,$(shell id -u)),,sudo) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium || \
	  ($(if $(filter 0,$(shell id -u)),,sudo) apt-get update && \
	   $(if $(filter 0,$(shell id -u)),,sudo) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)

# The public and hidden tests run in-process on the reference; tests/kit grades through the sandbox.
test: $(VENV)/.installed $(CHROMIUM)
	SUBMISSION=solutions/attention.py $(PY) -m pytest -q

grade: $(VENV)/.installed
	$(PY) -m grader grade $(SUBMISSION) --out $(OUT) --device $(DEVICE) $(if $(JOBS),--jobs $(JOBS)) --engine $(ENGINE) $(if $(RESULTS),--results $(RESULTS)) $(if $(SHARD),--shard $(SHARD)) $(if $(ROSTER),--roster $(ROSTER))

# make merge SHARDS="out-1 out-2 out-3" [OUT=out]: one class from the OUT folders of SHARD=i/N runs.
merge: $(VENV)/.installed
	$(PY) -m grader merge $(SHARDS) --out $(OUT) $(if $(ROSTER),--roster $(ROSTER))

# Speed and memory figures against the targets (200 submissions, the torch-import floor, otter run...).
bench: $(VENV)/.installed
	$(PY) bench/bench.py --count $(or $(COUNT),200) --device $(DEVICE) $(if $(JOBS),--jobs $(JOBS))

.PHONY: report diagnose-report
# The cohort report of a graded class, rebuilt from OUT/results/*.json (make grade writes it too).
report: $(VENV)/.installed
	$(PY) -m grader report --out $(OUT)

# Over the bug catalogue: how often the feedback names the expected cause; never a cause for a correct variant.
diagnose-report: $(VENV)/.installed
	$(PY) -m grader.faults.measure

student: $(VENV)/.installed
	$(PY) -m grader generate

publish: $(VENV)/.installed
	$(PY) -m grader publish --dist dist

# Third-party pytest plugins (installed with jupyter/otter) only slow a student's check down.
check: $(VENV)/.installed
	SUBMISSION=$(or $(SUBMISSION),exercises/attention.py) PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(PY) -m pytest tests/public -q $(if $(STEP),-m $(STEP))

clean:
	rm -rf $(OUT) .pytest_cache

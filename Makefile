# Every workflow of the attention exercise kit. Each target creates and reuses .venv/.
#   make test                      the kit's whole test suite (installs everything first)
#   make test-fast                 the same without the tests marked slow (class runs, launches of the grader...):
#                                  the unit and in-process tests (meant for under 3 minutes); make test runs all
#                                  (both two test files at a time; TEST_JOBS=1 one after another)
#   make grade [SUBMISSION=PATH] [OUT=DIR] [RESULTS=FILE]   grade a file, folder or zip (default: the sample class)
#   make grade ENGINE=otter [SUBMISSION=PATH]   the same through `otter run` and the stock Otter autograder
#   make grade SUBMISSION=canvas.zip ROSTER=roster.csv   also OUT/canvas_grades.csv and OUT/moodle_grades.csv
#   make grade SHARD=2/4 OUT=out-2 ; make merge SHARDS="out-1 out-2 out-3 out-4"   spread a class
#     (on Slurm or Kubernetes, SHARD comes from the task and SHARD_COUNT: cluster/, docs/cluster.md)
#   make grade TIME_LIMIT=10 MEMORY_LIMIT=1GiB SUBMISSION_TIME_LIMIT=120 JOBS=4   limits and parallelism
#   make grade REQUIRE_SANDBOX=1   refuse to grade unless every protection of the OS sandbox is on (docs/sandbox.md)
#   make grade OVERRIDES=overrides.csv   student,step,points,reason: applied to grades.csv, LMS files, report
#   make regrade STUDENT=name [SUBMISSION=file.py] [OUT=out]   regrade one student of a graded class (with the class's
#     ENGINE, DEVICE and limits, recorded in OUT/class.json, unless given)
#     (a student's overrides over another file: KEEP_OVERRIDES=1, or OVERRIDES=file without them; grade too)
#     (a class file sent after a regrade from SUBMISSION: make grade KEEP_REGRADES=1 keeps the regrade's file)
#   make bench [COUNT=200] [DEVICE=cuda]   speed and memory figures against the targets
#   make report [OUT=out]          the cohort report OUT/report.html from OUT/results (also after each bulk grade)
#   make diagnose-report [JOBS=N] [SPLIT=held-out]   caught / named / wrong cause per split, and the variants
#   make student                   regenerate exercises/, student_template/ and samples/class/ from solutions/
#   make publish [DIST=dist] [PARTS="nbgrader"] [COURSE_ID=ml101]   build dist/: student.zip (the one student
#                                  release) and solutions/ (its answer key), Otter, Gradescope and nbgrader autograders
#                                  (never touches grading work: docs/publishing.md)
#   make check STEP=masking [SUBMISSION=exercises/attention.py]   a student's public check of one step
# A knob is given on make's command line (make grade OUT=x), never picked up from the shell: an exported OUT,
# DEVICE or SUBMISSION (`make test` sets one for its own checks) must not redirect a run in silence.
KNOBS := $(shell sed -n 's/^\([A-Z][A-Z0-9_]*\) *?=.*/\1/p' $(firstword $(MAKEFILE_LIST)))
$(foreach knob,$(KNOBS),$(if $(filter environment,$(origin $(knob))),$(eval undefine $(knob))))
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
# `make test` and `make test-fast` run this many test files at once (pytest-xdist; a file's tests together, its
# fixtures built once): TEST_JOBS=1 runs them one after another.
TEST_JOBS ?= 2
OUT ?= out
SUBMISSION ?=
RESULTS ?=
STEP ?=
DEVICE ?=
JOBS ?=
ENGINE ?=
SHARD ?=
SHARDS ?=
ROSTER ?=
OVERRIDES ?=
KEEP_OVERRIDES ?=
KEEP_REGRADES ?=
STUDENT ?=
TIME_LIMIT ?=
MEMORY_LIMIT ?=
SUBMISSION_TIME_LIMIT ?=
ZIP_ENCODING ?=
COUNT ?=
DIST ?= dist
PARTS ?=
COURSE_ID ?=
REQUIRE_SANDBOX ?=
SPLIT ?=

# Every knob is declared above with `?=`. A variable given on the command line that is not one of them is
# a typo (TIME_LMIT=5 would otherwise be ignored in silence): stop and say which.
UNKNOWN := $(filter-out $(KNOBS),$(foreach v,$(.VARIABLES),$(if $(filter command line,$(origin $v)),$v)))
ifneq ($(strip $(UNKNOWN)),)
$(error unknown variable(s) $(strip $(UNKNOWN)); the knobs are: $(KNOBS))
endif
# A path as one shell word, whatever it holds (spaces, parentheses: `submissions (1).zip`, a browser's second
# download, broke the command line): single quotes, each ' inside written '"'"'.
quote = '$(subst ','"'"',$(1))'
# What `grade` and `regrade` pass on (a knob left empty keeps the grader's default: for `regrade`, what the class
# was graded with, recorded in OUT/class.json).
GRADING := $(if $(DEVICE),--device $(DEVICE)) $(if $(JOBS),--jobs $(JOBS)) $(if $(ENGINE),--engine $(ENGINE)) \
	$(if $(TIME_LIMIT),--time-limit $(TIME_LIMIT)) $(if $(MEMORY_LIMIT),--memory-limit $(MEMORY_LIMIT)) \
	$(if $(SUBMISSION_TIME_LIMIT),--submission-time-limit $(SUBMISSION_TIME_LIMIT)) \
	$(if $(ROSTER),--roster $(call quote,$(ROSTER))) $(if $(OVERRIDES),--overrides $(call quote,$(OVERRIDES))) \
	$(if $(REQUIRE_SANDBOX),--require-sandbox) $(if $(KEEP_OVERRIDES),--keep-overrides) $(if $(KEEP_REGRADES),--keep-regrades)

.PHONY: test test-fast grade regrade merge bench student check publish clean

# Three sets, one owner each: requirements.txt what grading imports (the Gradescope image gets exactly
# that), requirements-publish.txt the LMS tools (otter, nbgrader), requirements-test.txt the kit's tests.
$(VENV)/.installed: requirements.txt requirements-publish.txt requirements-test.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q -r requirements.txt -r requirements-publish.txt -r requirements-test.txt
	touch $@

# Headless Chromium (Debian's package, no browser download) renders the feedback pages in tests/kit.
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	$(if $(filter 0,$(shell id -u)),,sudo) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium || \
	  ($(if $(filter 0,$(shell id -u)),,sudo) apt-get update && \
	   $(if $(filter 0,$(shell id -u)),,sudo) env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium)

# The sandbox's seccomp filter is compiled by libseccomp (Debian's libseccomp2, usually present already);
# without it workers run without the filter and the run says so (docs/sandbox.md).
LIBSECCOMP := $(firstword $(wildcard /usr/lib/*/libseccomp.so.2 /lib/*/libseccomp.so.2 /usr/lib64/libseccomp.so.2))
.PHONY: sandbox-libs
sandbox-libs:
	$(if $(LIBSECCOMP),@true,$(if $(filter 0,$(shell id -u)),,sudo) env DEBIAN_FRONTEND=noninteractive apt-get install -y libseccomp2 || \
	  ($(if $(filter 0,$(shell id -u)),,sudo) apt-get update && \
	   $(if $(filter 0,$(shell id -u)),,sudo) env DEBIAN_FRONTEND=noninteractive apt-get install -y libseccomp2))

# The hostile battery (tests/kit/test_hostile_battery.py) grades as root, as an ordinary user and in the
# sandbox's basic mode; as root (CI) it fails rather than skip when what it needs is missing. As root this
# creates that account (kittest, no login, no home) and a Python it can run without opening any folder of
# the kit or of root: a virtual environment of the system's python3.X (installed where missing) in
# TEST_VENV, its site-packages hard links of .venv's (copied across file systems), rebuilt when .venv is.
# As an ordinary user there is nothing to do: the battery grades as that user.
TEST_USER := kittest
TEST_VENV := /opt/attention-kit-tests/venv
.PHONY: test-account
test-account: $(VENV)/.installed
	@if [ "$$(id -u)" != 0 ]; then exit 0; fi; set -e; \
	id -u $(TEST_USER) >/dev/null 2>&1 || useradd --system --user-group --no-create-home --home-dir /nonexistent \
	  --shell /usr/sbin/nologin $(TEST_USER); \
	if [ "$(TEST_VENV)/.built" -nt "$(VENV)/.installed" ]; then exit 0; fi; \
	version=$$($(PY) -c 'import sys; print("%d.%d" % sys.version_info[:2])'); \
	base=/usr/bin/python$$version; \
	[ -x "$$base" ] || env DEBIAN_FRONTEND=noninteractive apt-get install -y python$$version-minimal python$$version || \
	  (apt-get update && env DEBIAN_FRONTEND=noninteractive apt-get install -y python$$version-minimal python$$version); \
	rm -rf "$(TEST_VENV).new"; mkdir -p "$$(dirname $(TEST_VENV))"; chmod 755 "$$(dirname $(TEST_VENV))"; \
	"$$base" -m venv --without-pip "$(TEST_VENV).new"; \
	packages=lib/python$$version/site-packages; \
	cp -al "$(VENV)/$$packages/." "$(TEST_VENV).new/$$packages/" 2>/dev/null || \
	  cp -a "$(VENV)/$$packages/." "$(TEST_VENV).new/$$packages/"; \
	find "$(TEST_VENV).new" -type d -exec chmod a+rx {} +; \
	rm -rf "$(TEST_VENV)"; mv "$(TEST_VENV).new" "$(TEST_VENV)"; touch "$(TEST_VENV)/.built"; \
	runuser -u $(TEST_USER) -- "$(TEST_VENV)/bin/python" -c 'import torch, numpy' || \
	  { echo "make test-account: $(TEST_USER) cannot import torch from $(TEST_VENV)" >&2; exit 1; }

# The public and hidden tests run in-process on the reference; tests/kit grades through the sandbox.
# --durations: the slowest tests and fixtures of every run, printed last (where the half hour goes).
test: $(VENV)/.installed $(CHROMIUM) sandbox-libs test-account
	SUBMISSION=solutions/attention.py $(PY) -m pytest -q --durations=30 -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder

# The fast tier, set up as `make test` is: every test but those marked slow (tests/kit/conftest.py says why each is).
test-fast: $(VENV)/.installed $(CHROMIUM) sandbox-libs test-account
	SUBMISSION=solutions/attention.py $(PY) -m pytest -q --durations=30 -n $(TEST_JOBS) --dist loadfile --no-loadscope-reorder -m "not slow"

grade: $(VENV)/.installed sandbox-libs
	$(PY) -m grader grade $(if $(SUBMISSION),$(call quote,$(SUBMISSION))) --out $(call quote,$(OUT)) $(GRADING) $(if $(RESULTS),--results $(call quote,$(RESULTS))) $(if $(SHARD),--shard $(SHARD)) $(if $(ZIP_ENCODING),--zip-encoding $(ZIP_ENCODING))

# make regrade STUDENT=name [SUBMISSION=file]: one student again, into the class's OUT (every class file follows).
regrade: $(VENV)/.installed sandbox-libs
	$(if $(STUDENT),,$(error make regrade needs STUDENT=<a name from $(OUT)/grades.csv>))
	$(PY) -m grader regrade $(call quote,$(STUDENT)) --out $(call quote,$(OUT)) $(GRADING) $(if $(SUBMISSION),--submission $(call quote,$(SUBMISSION)))

# make merge SHARDS="out-1 out-2 out-3" [OUT=out]: one class from the OUT folders of SHARD=i/N runs.
merge: $(VENV)/.installed
	$(PY) -m grader merge $(SHARDS) --out $(call quote,$(OUT)) $(if $(ROSTER),--roster $(call quote,$(ROSTER))) $(if $(OVERRIDES),--overrides $(call quote,$(OVERRIDES)))

# Speed and memory figures against the targets (200 submissions, the torch-import floor, otter run...).
bench: $(VENV)/.installed sandbox-libs
	$(PY) bench/bench.py --count $(or $(COUNT),200) --device $(or $(DEVICE),cpu) $(if $(JOBS),--jobs $(JOBS))

.PHONY: report diagnose-report
# The cohort report of a graded class, rebuilt from OUT/results/*.json (make grade writes it too).
report: $(VENV)/.installed
	$(PY) -m grader report --out $(call quote,$(OUT))

# Over the fault catalogue, tuning and held-out splits apart: caught, cause named, wrong cause; never a cause for
# a correct variant. Grades JOBS submissions at a time (default: one per core); docs/diagnosis.md.
diagnose-report: $(VENV)/.installed
	$(PY) -m grader.faults.measure $(if $(JOBS),--jobs $(JOBS)) $(if $(SPLIT),--split $(SPLIT))

student: $(VENV)/.installed
	$(PY) -m grader generate

publish: $(VENV)/.installed
	$(PY) -m grader publish --dist $(call quote,$(DIST)) $(PARTS) $(if $(COURSE_ID),--course-id $(COURSE_ID))

# Third-party pytest plugins (installed with jupyter/otter) only slow a student's check down.
check: $(VENV)/.installed
	SUBMISSION=$(or $(SUBMISSION),exercises/attention.py) PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 $(PY) -m pytest tests/public -q $(if $(STEP),-m $(STEP))

# Removes OUT only when it is what `make grade` writes (OUT=~ by mistake must not cost a home folder).
# An nbgrader course (its own export writes a grades.csv) or a publish folder is never a grading OUT.
clean:
	@if [ -e $(call quote,$(OUT)) ] && ! [ -e $(call quote,$(OUT))/class.json -o -d $(call quote,$(OUT))/results -o -e $(call quote,$(OUT))/results.json -o -e $(call quote,$(OUT))/.grading.lock ]; then \
		echo "make clean: $(OUT) holds no class.json, results/ or results.json, so it is not a grading OUT; nothing removed" >&2; exit 2; fi
	@if [ -e $(call quote,$(OUT))/nbgrader_config.py -o -e $(call quote,$(OUT))/gradebook.db -o -e $(call quote,$(OUT))/student.zip ]; then \
		echo "make clean: $(OUT) holds an nbgrader course or a publish folder (nbgrader_config.py, gradebook.db or student.zip); nothing removed" >&2; exit 2; fi
	rm -rf -- $(call quote,$(OUT)) .pytest_cache

# specdec.bench: the two commands are `make demo` (the main job) and `make test` (every test).
# Both set up what they need on a fresh Debian machine as root; every step is skipped when already done.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON   ?= python3
VENV     := .venv
BIN      := $(VENV)/bin
CACHE    := .cache
COLLECTION_LINK := $(CACHE)/collections/ansible_collections/specdec/bench
# chromium and its driver: the monitoring page's browser test (selenium drives the system browser, no download)
# pdflatex and booktabs: report.tex (and the papers' tables) are compiled in the report's tests, not only checked as text
# bubblewrap: the sandbox that runs generated code against the reference tests (accuracy: {execute_code: true})
HOST_PACKAGES := podman runc debootstrap shellcheck chromium chromium-driver texlive-latex-base texlive-latex-recommended bubblewrap
SIM_INVENTORY := inventories/sim

export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
# Ansible's home inside the checkout: ansible-lint installs the collection under it, and an installed copy in
# ~/.ansible/collections can never shadow the checkout in lint or molecule.
export ANSIBLE_HOME := $(CURDIR)/$(CACHE)/ansible-home
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/$(CACHE)/collections
export ANSIBLE_FORCE_COLOR := 0
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: help demo test setup host-packages venv image sim-up sim-down lint sanity unit collection molecule build clean \
	role-docs changelog

help:
	@echo "make demo   bring up the simulated hosts and run the pipeline against them"
	@echo "make test   lint, sanity, unit tests and molecule scenarios"
	@echo "make role-docs   regenerate roles/*/README.md from each role's meta/argument_specs.yml"
	@echo "make changelog   regenerate CHANGELOG.md from changelogs/ (add a fragment to changelogs/fragments/)"

## --- set-up ---------------------------------------------------------------------------------
host-packages:
	@missing=$$(for p in $(HOST_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages: $$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	@# crun fails on hybrid cgroups here; podman's default ulimits exceed the hard limit. A drop-in, not /etc/containers.conf.
	@install -D -m 0644 tests/sim/image/containers.conf /etc/containers/containers.conf.d/50-specdec-sim.conf

$(BIN)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -r requirements.txt
	touch $@

venv: $(BIN)/.installed
	@mkdir -p $(dir $(COLLECTION_LINK))
	@ln -sfn $(CURDIR) $(COLLECTION_LINK)

setup: host-packages venv

image: setup
	@tests/sim/image/build.sh >/dev/null

## --- the main job ---------------------------------------------------------------------------
sim-up: image
	SIM_IMAGE=$$(cat $(CACHE)/sim/image) $(BIN)/ansible-playbook -i $(SIM_INVENTORY) tests/sim/up.yml

sim-down: venv
	$(BIN)/ansible-playbook -i $(SIM_INVENTORY) tests/sim/down.yml

demo: sim-up
	$(BIN)/ansible-playbook -i $(SIM_INVENTORY) playbooks/site.yml -e @campaigns/sim.yml
	@# where speculation pays on the CT200: TP1 under load, SLOs, the capacity search, the crossover and a schedule
	$(BIN)/ansible-playbook -i $(SIM_INVENTORY) playbooks/site.yml -e @campaigns/sim-load.yml
	@# the schedule it wrote, measured again at its band edges on fresh servers: the check's report fails on a reversal
	$(BIN)/ansible-playbook -i $(SIM_INVENTORY) playbooks/schedule_check.yml -e @campaigns/sim-load.yml
	$(BIN)/ansible-playbook -i $(SIM_INVENTORY) playbooks/site.yml -e @reports/qwen36-sim-load/schedule-check.yml
	@# the loop from training to benchmark: a short training run on the A100 box writes six draft checkpoints, then
	@# playbooks/evaluate.yml copies them to the CT200, measures each against one AR baseline and reports tau vs step
	$(BIN)/ansible-playbook -i $(SIM_INVENTORY) playbooks/train.yml -l a100box -e @tests/sim/trainer/a100box-checkpoints.yml
	@for i in $$(seq 180); do podman exec specdec-demo-a100box test -e /root/train_runs/dflash-ckpt/checkpoints/final/config.json \
	  && exit 0; sleep 1; done; echo "the training run wrote no final checkpoint within 180 s" >&2; exit 1
	$(BIN)/ansible-playbook -i $(SIM_INVENTORY) playbooks/evaluate.yml -e @campaigns/evaluate-sim.yml
	@echo
	@echo "Report:  $(CURDIR)/reports/qwen36-sim/report.md (with results.csv, results.json, report.tex and the plots)"
	@echo "Load:    $(CURDIR)/reports/qwen36-sim-load/report.md (capacity at SLO, crossover, schedule.json)"
	@echo "Check:   $(CURDIR)/reports/qwen36-sim-load-check/report.md (the schedule at its band edges: Schedule check)"
	@echo "Results: $(CURDIR)/results/<host>/qwen36-sim/ (collected); on the hosts in /root/bench_results/qwen36-sim/"
	@echo "Checkpoints: $(CURDIR)/reports/eval-dflash-ckpt/report.md (tau and speedup against training step, the best named)"
	@echo "The simulated hosts keep running: podman exec specdec-demo-ct200 nvidia-smi; make sim-down removes them."

## --- tests ----------------------------------------------------------------------------------
test: lint sanity unit collection molecule

# ansible-lint, then the docs: role READMEs current, changelog fragments, antsibull-docs on every plugin and role
lint: setup
	$(BIN)/ansible-lint --profile production
	tests/build/check_docs.sh

sanity: setup
	tests/sanity/run.sh

unit: setup
	$(BIN)/python -m pytest tests/unit

collection: setup
	tests/build/check_collection.sh

molecule: image
	SIM_IMAGE=$$(cat $(CACHE)/sim/image) $(BIN)/molecule test --all

## --- generated docs -------------------------------------------------------------------------
role-docs: venv
	tests/build/role_docs.sh

changelog: venv
	$(BIN)/antsibull-changelog lint
	$(BIN)/antsibull-changelog generate

build: venv
	mkdir -p build && $(BIN)/ansible-galaxy collection build --force --output-path build .

clean:
	rm -rf build $(CACHE)/sanity

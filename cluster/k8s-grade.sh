#!/bin/sh
# Grade the class on Kubernetes, then merge it (docs/cluster.md): run grade-job.yaml, wait until it has
# completed or failed, whichever comes first, and only after a complete one run merge-job.yaml.
# `kubectl wait --for=condition=complete` alone is not enough: it waits for that one condition, so when
# the Job fails it waits out its whole timeout (kubernetes/kubernetes#100248, kubernetes/kubectl#1629).
# Usage, from the kit's folder:  sh cluster/k8s-grade.sh      (TIMEOUT=seconds, 7200 unless given)
set -eu
cd "$(dirname "$0")"
TIMEOUT="${TIMEOUT:-7200}"
POLL="${POLL:-20}"

finished() {  # wait for Job $1 to complete (0) or fail (1); 2 after TIMEOUT seconds
  waited=0
  while [ "$waited" -lt "$TIMEOUT" ]; do
    for state in $(kubectl get "job/$1" -o 'jsonpath={.status.conditions[?(@.status=="True")].type}'); do
      case "$state" in
        Complete) return 0 ;;
        Failed) return 1 ;;
      esac
    done
    sleep "$POLL"
    waited=$((waited + POLL))
  done
  return 2
}

# The Jobs of an earlier run are replaced (a Job's pod template cannot be changed); the slices' results stay
# on the volume, and the new Job resumes from them.
kubectl delete job/grade-attention job/merge-attention --ignore-not-found
kubectl apply -f grade-job.yaml
if finished grade-attention; then :; else
  status=$?
  echo "grading did not complete ($([ "$status" = 1 ] && echo "the Job failed" || echo "still running after ${TIMEOUT}s")):" \
       "see kubectl describe job/grade-attention and kubectl logs job/grade-attention; the merge is not run" >&2
  exit 1
fi
kubectl apply -f merge-job.yaml
if finished merge-attention; then status=0; else status=$?; fi
kubectl logs job/merge-attention
if [ "$status" != 0 ]; then
  echo "the merge did not complete: its log above says why and which slices to grade again" >&2
  exit 1
fi

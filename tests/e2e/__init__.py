"""Whole workflows across the distributions: rollouts through vf-eval, served training
workers, Docker and Swarm launches, the catalog's packages, the README's first steps, the
GitHub workflows. The slow tests (markers rollout, served, docker, swarm) are here."""

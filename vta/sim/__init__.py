"""Simulators of the accelerator behind one small device contract (:mod:`vta.sim.device`)."""

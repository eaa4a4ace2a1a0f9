"""The telephony provider side: the upstream recordings client, and the simulated provider."""

"""AFLite (WinoGrande's adversarial filtering): the instances a linear model over fixed features can
predict without resolving anything, found and removed; with the evidence that it worked."""

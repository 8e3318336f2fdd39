"""Settings measured and left off that the lab still studies, as plug-ins through the product's registries
(importing a module registers it; the product never imports this package)."""

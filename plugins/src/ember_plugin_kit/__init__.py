"""ember's plugin kit: what every backend plugin shares.

``ember_plugin_kit.pjrt`` bridges ember to PJRT clients through jaxlib;
``ember_plugin_kit.gpu`` holds what the GPU plugins share (options, driver probes, libraries);
``ember_plugin_kit.conformance`` is the backend conformance suite, a pytest plugin
(``pytest --ember-platform=NAME``).
"""

__version__ = "0.1.0"

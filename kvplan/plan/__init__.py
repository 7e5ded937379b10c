"""One configuration and its figures: the knobs a user sets, the Scenario they make, and ``evaluate``.

``from kvplan.plan import Scenario, evaluate`` is the library's entry point below the CLI.
"""

from kvplan.plan.scenario import Scenario
from kvplan.plan import core
from kvplan.plan.evaluation import (
    Evaluation,
    Flash,
    cache_model_for,
    evaluate,
    max_ctx_limited_by,
    prefill_s_of,
    weights_of,
)
from kvplan.plan.knobs import Knobs, build_scenario, element_formats

__all__ = ["Evaluation", "core", "Flash", "Knobs", "Scenario", "build_scenario", "cache_model_for", "element_formats",
           "evaluate", "max_ctx_limited_by", "prefill_s_of", "weights_of"]

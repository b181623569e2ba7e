"""mypy must reject each line marked `# E: <code>`, and nothing else (tests/test_typing.py).

Market and Features are both [B, K, 40] f32, yet their arrays are not interchangeable.
"""

from generated.vsn import (
    Bias,
    FeatureStats,
    Features,
    Market,
    Weights,
    Window,
    snap_feature_assemble,
    variable_selection_fwd,
)
from layoutgen.runtime.typed import Array

market = Market.empty(4, 8)
features = Features.empty(4, 8)
variable_selection_fwd(Window.empty(4, 8), Weights.empty(40), Bias.empty(), market, features)  # E: arg-type
typed: Array[Features] = Market.wrap(features.data)  # E: assignment
snap_feature_assemble(market, FeatureStats.empty(40), FeatureStats.empty(40), Window.empty(4, 8))  # fine
snap_feature_assemble(features, FeatureStats.empty(40), FeatureStats.empty(40), Window.empty(4, 8))  # E: arg-type
variable_selection_fwd(Window.empty(4, 8), Weights.empty(40), Bias.empty(), features, features)  # fine

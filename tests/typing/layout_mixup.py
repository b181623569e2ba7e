"""mypy must reject this file: a Features array passed where a Window is expected."""

from generated.vsn import Features, Weights, Bias, Window, variable_selection_fwd

window = Window.empty(4, 8)
features = Features.empty(4, 8)
variable_selection_fwd(features, Weights.empty(40), Bias.empty(), features, features)  # x must be a Window
variable_selection_fwd(window, Weights.empty(40), Bias.empty(), features, features)  # fine

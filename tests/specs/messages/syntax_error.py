"""Messages case (tests/test_messages.py): a syntax error on the line `# <-` marks."""

from layoutgen import Layout, Spec, dims, f32

(N,) = dims("N")
Image = Layout("Image", [N], f32, width=128  # <-
spec = Spec("syntax_error")

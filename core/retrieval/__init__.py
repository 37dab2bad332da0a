"""Layer 2, retrieval: texts to vectors (MiniLM: ONNX Runtime, else numpy or torch), the index, and RtP, PtR's
merge and the hybrid."""

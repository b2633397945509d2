"""The fitted confidence model: written by ``bench/fit_confidence.py``, not by hand.

Placeholder until the first fit: a model that reads the raw cosine alone.
"""

from app.routing.confidence import ConfidenceModel

CONFIDENCE_MODEL = ConfidenceModel(
    features=("cosine",),
    mean=(0.3,),
    scale=(0.1,),
    weights=(1.0,),
    intercept=0.0,
    encoder="none",
)
RECOMMENDED_MIN_CONFIDENCE = 0.5

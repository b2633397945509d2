r"""The fitted confidence model: written by ``bench.tools.fit_confidence``, not by hand.

Reproduce, from the repository root::

    python -m bench.tools.fit_confidence --metatool /work/shared/data/metatool \
        --seal /work/shared/data/seal-tools --write app/routing/confidence_fit.py
"""

from app.routing.confidence import ConfidenceModel, Logistic, Shape

CONFIDENCE_MODEL = ConfidenceModel(
    leader=Logistic(
        intercept=-1.209282,
        shapes=(
            Shape(
                "cosine",
                0.123232,
                0.76499,
                (0.324029, 0.424583, 0.533456),
                (5.641531, 2.131199, 0.0, 2.472941),
            ),
            Shape(
                "part_cosine",
                0.131846,
                0.834234,
                (0.333459, 0.444032, 0.583825),
                (0.12525, 1.010285, 6.133147, 9.005655),
            ),
            Shape(
                "log_bm25",
                0.0,
                4.074342,
                (1.293314, 1.743418, 2.342573),
                (0.0, 0.0, 2.187773, 3.512057),
            ),
            Shape(
                "coverage", 0.0, 1.0, (0.125, 0.2, 0.333333), (0.0, 1.924746, 1.507742, 0.685977)
            ),
            Shape(
                "fused",
                1.560798,
                22.004074,
                (4.027488, 5.848223, 9.239277),
                (0.303747, 0.0, 0.0, 0.030581),
            ),
            Shape(
                "lead",
                0.01159,
                11.948058,
                (0.674488, 1.779829, 3.390663),
                (0.12535, 0.362652, 0.138421, 0.0),
            ),
            Shape(
                "relative_lead",
                0.002504,
                1.017322,
                (0.122793, 0.290446, 0.52802),
                (2.202376, 2.931233, 2.466642, 4.94976),
            ),
            Shape("log_tools", 2.302585, 8.312871, (), (-0.544919,)),
            Shape("log_parts", 0.0, 2.079442, (), (-0.114442,)),
        ),
    ),
    others=Logistic(
        intercept=-9.069976,
        shapes=(
            Shape(
                "cosine",
                0.043295,
                0.591226,
                (0.20083, 0.265917, 0.341404),
                (4.475582, 0.0, 0.0, 0.0),
            ),
            Shape(
                "part_cosine",
                0.05001,
                0.768698,
                (0.20989, 0.276918, 0.367023),
                (0.0, 0.0, 4.386655, 8.410453),
            ),
            Shape(
                "log_bm25",
                0.0,
                3.71477,
                (0.519945, 1.130222, 1.62804),
                (0.0, 0.0, 0.655457, 1.312908),
            ),
            Shape(
                "coverage", 0.0, 0.507237, (0.043478, 0.111111, 0.185185), (0.0, 0.0, 3.611488, 0.0)
            ),
            Shape(
                "fused",
                -0.182329,
                17.540305,
                (2.327687, 3.182808, 5.709606),
                (0.0, 0.0, 0.0, 0.030405),
            ),
            Shape(
                "lead",
                -12.805519,
                -0.021085,
                (-3.968609, -2.249513, -0.996219),
                (0.0, 0.01143, 0.435787, 0.798358),
            ),
            Shape(
                "gap", 0.002114, 6.125017, (0.144763, 0.387138, 0.932492), (0.0, 0.0, 0.0, 0.114392)
            ),
            Shape(
                "relevance",
                -0.061408,
                0.995235,
                (0.406643, 0.6314, 0.814671),
                (4.12041, 2.571808, 0.000816, 0.0),
            ),
            Shape(
                "relative_lead",
                -1.061408,
                -0.004765,
                (-0.593357, -0.3686, -0.185329),
                (4.12041, 2.571808, 0.000816, 0.0),
            ),
            Shape(
                "relative_gap",
                0.000372,
                0.670921,
                (0.026505, 0.066755, 0.142492),
                (0.0, 1.517952, 1.442195, 0.0),
            ),
            Shape("log_tools", 2.302585, 8.312871, (), (-0.526461,)),
            Shape("log_parts", 0.0, 2.079442, (), (1.317509,)),
            Shape("penalty", -0.1, 0.0, (), (11.297928,)),
        ),
    ),
    encoder="all-MiniLM-L6-v2-onnx-qint8-73c8bb52+universal-sentence-encoder-multilingual-3@0.4",
)
# The min_confidence picked on the tuning splits (docs/ROUTING.md, "Confidence").
RECOMMENDED_MIN_CONFIDENCE = 0.28

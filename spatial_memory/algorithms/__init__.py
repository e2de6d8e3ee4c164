"""Pure numerical algorithms: numpy arrays in, arrays / plain Python out.

Clustering and regions need numpy only (sparse_graph.py); scipy is imported inside the one
function that needs it (a layout curve outside layout.py's table), so importing this package stays
cheap.
"""

from .clustering import (
    ClusterResult,
    cluster_vectors,
    coherence,
    find_regions,
    limit_clusters,
    representative_index,
    silhouette,
    similarity_groups,
)
from .decay import apply_decay, decay_factor
from .grouping import mean_pairwise_similarity, near_duplicate_groups
from .interpolation import interpolation_ts, slerp
from .keywords import STOPWORDS, class_tfidf_keywords, tokenize
from .neighbors import cosine_knn
from .pca import pca_reduce
from .projection import normalize_coordinates, project, warm_up_projection
from .sampling import choose, softmax_probabilities, temperature_scale

__all__ = [
    "STOPWORDS",
    "ClusterResult",
    "apply_decay",
    "choose",
    "class_tfidf_keywords",
    "cluster_vectors",
    "coherence",
    "cosine_knn",
    "decay_factor",
    "find_regions",
    "interpolation_ts",
    "limit_clusters",
    "mean_pairwise_similarity",
    "near_duplicate_groups",
    "normalize_coordinates",
    "pca_reduce",
    "similarity_groups",
    "project",
    "representative_index",
    "silhouette",
    "slerp",
    "softmax_probabilities",
    "temperature_scale",
    "tokenize",
    "warm_up_projection",
]

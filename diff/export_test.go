package diff

// MergeModel exposes mergeModel to the external tests.
var MergeModel = mergeModel

package diff

// MergeModel exposes mergeModel to the external tests.
var MergeModel = mergeModel

// ModelChanged exposes modelChanged to the external tests.
var ModelChanged = modelChanged

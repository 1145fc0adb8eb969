package simulate

import "gopkg.in/yaml.v3"

// MarshalYAML writes a step as its fields say, keeping what the parser would otherwise read differently: a
// prewarm of zero boxes writes `boxes: 0` (an omitted `boxes` means one box), so that a saved or replayed
// scenario is the scenario that ran (found by FuzzParseScenario).
func (st Step) MarshalYAML() (any, error) {
	type plain Step // the fields without this method
	var n yaml.Node
	if err := n.Encode(plain(st)); err != nil {
		return nil, err
	}
	if st.Op == OpPrewarm && st.Boxes == 0 && n.Kind == yaml.MappingNode {
		n.Content = append(n.Content,
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "boxes"},
			&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: "0"})
	}
	return &n, nil
}

// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A minimal ENS for tests of name resolution on a devnet: the registry (node → owner, resolver),
/// a resolver (addr and name records, set by the node's owner) and the reverse registrar that
/// gives each address its `<hex>.addr.reverse` node. The same calls as ENS's own contracts.
contract TestENSRegistry {
    struct Record {
        address owner;
        address resolver;
    }

    mapping(bytes32 => Record) private records;

    constructor() {
        records[bytes32(0)].owner = msg.sender;
    }

    modifier authorised(bytes32 node) {
        require(records[node].owner == msg.sender, "ENS: not the owner");
        _;
    }

    function setSubnodeOwner(bytes32 node, bytes32 label, address owner_) external authorised(node) returns (bytes32) {
        bytes32 subnode = keccak256(abi.encodePacked(node, label));
        records[subnode].owner = owner_;
        return subnode;
    }

    function setResolver(bytes32 node, address resolver_) external authorised(node) {
        records[node].resolver = resolver_;
    }

    function owner(bytes32 node) external view returns (address) {
        return records[node].owner;
    }

    function resolver(bytes32 node) external view returns (address) {
        return records[node].resolver;
    }
}

contract TestENSResolver {
    TestENSRegistry public immutable ens;
    mapping(bytes32 => address) private addrs;
    mapping(bytes32 => string) private names;

    constructor(TestENSRegistry ens_) {
        ens = ens_;
    }

    modifier authorised(bytes32 node) {
        require(ens.owner(node) == msg.sender, "resolver: not the owner");
        _;
    }

    function setAddr(bytes32 node, address a) external authorised(node) {
        addrs[node] = a;
    }

    function setName(bytes32 node, string calldata name_) external authorised(node) {
        names[node] = name_;
    }

    function addr(bytes32 node) external view returns (address) {
        return addrs[node];
    }

    function name(bytes32 node) external view returns (string memory) {
        return names[node];
    }
}

contract TestReverseRegistrar {
    /// namehash("addr.reverse")
    bytes32 public constant ADDR_REVERSE_NODE = 0x91d1777781884d03a6757a803996e38de2a42967fb37eeaca72729271025a9e2;
    TestENSRegistry public immutable ens;
    TestENSResolver public immutable resolver;

    constructor(TestENSRegistry ens_, TestENSResolver resolver_) {
        ens = ens_;
        resolver = resolver_;
    }

    /// Sets the sender's primary name: its reverse node's name record.
    function setName(string calldata name_) external returns (bytes32) {
        bytes32 node = ens.setSubnodeOwner(ADDR_REVERSE_NODE, sha3HexAddress(msg.sender), address(this));
        ens.setResolver(node, address(resolver));
        resolver.setName(node, name_);
        return node;
    }

    /// keccak256 of the address as 40 lower-case hex digits (the reverse node's label).
    function sha3HexAddress(address a) internal pure returns (bytes32) {
        bytes memory s = new bytes(40);
        uint160 v = uint160(a);
        for (uint256 i = 0; i < 40; i++) {
            uint8 nibble = uint8(v >> (4 * (39 - i))) & 0xf;
            s[i] = bytes1(nibble < 10 ? nibble + 48 : nibble + 87);
        }
        return keccak256(s);
    }
}

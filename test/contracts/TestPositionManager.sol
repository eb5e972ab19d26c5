// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// Uniswap V3's NonfungiblePositionManager reduced to what a reader of positions sees: the same
/// positions(uint256) view (all twelve fields, same order and types), factory(), and ERC-721 ownership
/// (Transfer with an indexed tokenId, ownerOf, balanceOf, transferFrom). A minimal stand-in: mint takes the
/// position's fields as given (no tokens move, no pool is touched), so a test sets liquidity, ticks and
/// tokensOwed directly and checks what a reader makes of them against the pool's slot0.
contract TestPositionManager {
    struct Position {
        uint96 nonce;
        address operator;
        address token0;
        address token1;
        uint24 fee;
        int24 tickLower;
        int24 tickUpper;
        uint128 liquidity;
        uint256 feeGrowthInside0LastX128;
        uint256 feeGrowthInside1LastX128;
        uint128 tokensOwed0;
        uint128 tokensOwed1;
    }

    string public constant name = "Uniswap V3 Positions NFT-V1";
    string public constant symbol = "UNI-V3-POS";
    address public immutable factory;
    uint256 private _nextId = 1;
    mapping(uint256 => Position) private _positions;
    mapping(uint256 => address) private _owners;
    mapping(address => uint256) public balanceOf;

    event Transfer(address indexed from, address indexed to, uint256 indexed tokenId);

    constructor(address factory_) {
        factory = factory_;
    }

    function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
        return interfaceId == 0x80ac58cd || interfaceId == 0x01ffc9a7;
    }

    function ownerOf(uint256 tokenId) public view returns (address owner) {
        owner = _owners[tokenId];
        require(owner != address(0), "ERC721: nonexistent token");
    }

    function positions(uint256 tokenId)
        external
        view
        returns (uint96, address, address, address, uint24, int24, int24, uint128, uint256, uint256, uint128, uint128)
    {
        Position storage p = _positions[tokenId];
        require(p.token0 != address(0), "Invalid token ID");
        return (p.nonce, p.operator, p.token0, p.token1, p.fee, p.tickLower, p.tickUpper, p.liquidity, p.feeGrowthInside0LastX128, p.feeGrowthInside1LastX128, p.tokensOwed0, p.tokensOwed1);
    }

    /// Mints the next token id to `to` with the position `p` as given.
    function mint(address to, Position calldata p) external returns (uint256 tokenId) {
        require(p.token0 < p.token1 && p.tickLower < p.tickUpper, "bad position");
        tokenId = _nextId++;
        _positions[tokenId] = p;
        _owners[tokenId] = to;
        balanceOf[to] += 1;
        emit Transfer(address(0), to, tokenId);
    }

    function transferFrom(address from, address to, uint256 tokenId) external {
        require(ownerOf(tokenId) == from && msg.sender == from && to != address(0), "ERC721: not owner");
        _owners[tokenId] = to;
        balanceOf[from] -= 1;
        balanceOf[to] += 1;
        emit Transfer(from, to, tokenId);
    }
}
